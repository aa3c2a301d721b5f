// Package dial is what the examples share to reach the three providers:
// their names and defaults, their flags, the adapter over a real endpoint
// and the adapter over an in-process fake server.
package dial

import (
	"context"
	"errors"
	"flag"
	"os"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/anthropic"
	"github.com/portico-llm/portico/provider/gemini"
	"github.com/portico-llm/portico/provider/openai"
)

// The providers, in the examples' fallback order: indices of Providers.
const (
	OpenAI = iota
	Anthropic
	Gemini
	N
)

// Provider is one provider's flags' defaults.
type Provider struct {
	Name, Title    string // flag prefix and route name; display name
	Model, Example string // default model; an example base URL
	// KeyVar is the environment variable a real endpoint needs, or "" when
	// the SDK finds its key itself (genai: GEMINI_API_KEY or GOOGLE_API_KEY).
	KeyVar string
}

// Providers are the three, by index.
var Providers = [N]Provider{
	{Name: "openai", Title: "OpenAI", Model: "gpt-4o-mini", Example: "https://api.openai.com/v1/", KeyVar: "OPENAI_API_KEY"},
	{Name: "anthropic", Title: "Anthropic", Model: "claude-haiku-4-5", Example: "https://api.anthropic.com/", KeyVar: "ANTHROPIC_API_KEY"},
	{Name: "gemini", Title: "Gemini", Model: "gemini-2.5-flash", Example: "https://generativelanguage.googleapis.com/"},
}

// Flags registers -NAME-url (empty: a fake) and -NAME-model (default: the
// provider's Model) of each provider on the default FlagSet.
func Flags(url, model *[N]string) {
	for i, p := range Providers {
		flag.StringVar(&url[i], p.Name+"-url", "", p.Title+" base URL (e.g. "+p.Example+"); empty starts an in-process fake server")
		flag.StringVar(&model[i], p.Name+"-model", p.Model, p.Title+" model name")
	}
}

// Real returns provider i's adapter for model at url, a real endpoint. It
// fails when the provider's KeyVar is unset or the SDK refuses its
// configuration.
func Real(ctx context.Context, i int, url, model string) (portico.Model, error) {
	if v := Providers[i].KeyVar; v != "" && os.Getenv(v) == "" {
		return nil, errors.New("-" + Providers[i].Name + "-url needs " + v)
	}
	switch i {
	case OpenAI:
		return openai.New(openai.Config{Model: model}, openaisdk.WithBaseURL(url)), nil
	case Anthropic:
		return anthropic.New(anthropic.Config{Model: model}, anthropicsdk.WithBaseURL(url)), nil
	}
	return gemini.New(ctx, gemini.Config{Model: model}, genai.ClientConfig{HTTPOptions: genai.HTTPOptions{BaseURL: url}})
}

// OverOpenAI returns the OpenAI adapter for model over srv.
func OverOpenAI(srv *fakeopenai.Server, model string) portico.Model {
	return openai.New(openai.Config{Model: model}, openaisdk.WithBaseURL(srv.BaseURL()), openaisdk.WithAPIKey("fake"), openaisdk.WithHTTPClient(srv.Client()))
}

// OverAnthropic returns the Anthropic adapter for model over srv.
func OverAnthropic(srv *fakeanthropic.Server, model string) portico.Model {
	return anthropic.New(anthropic.Config{Model: model}, anthropicsdk.WithBaseURL(srv.BaseURL()), anthropicsdk.WithAPIKey("fake"), anthropicsdk.WithHTTPClient(srv.Client()))
}

// OverGemini returns the Gemini adapter for model over srv; it closes srv
// when the SDK refuses its configuration.
func OverGemini(ctx context.Context, srv *fakegemini.Server, model string) (portico.Model, error) {
	m, err := gemini.New(ctx, gemini.Config{Model: model}, genai.ClientConfig{APIKey: "fake", HTTPClient: srv.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL()}})
	if err != nil {
		srv.Close()
		return nil, err
	}
	return m, nil
}
