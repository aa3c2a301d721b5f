package portico_test

import (
	"errors"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest"
)

func doc(m *portico.Media) portico.Message {
	return portico.Message{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartText, Text: "Summarize."}, {Kind: portico.PartDocument, Media: m}}}
}

// TestMediaValidate: a document or audio part needs Media with exactly one
// source and a type (a file id may go without): anything else is wrong on
// every route, Permanent before any route is called.
func TestMediaValidate(t *testing.T) {
	pdf := []byte("%PDF-1.7")
	for _, tc := range []struct {
		name string
		m    *portico.Media
		ok   bool
	}{
		{"data", &portico.Media{Type: "application/pdf", Data: pdf}, true},
		{"url", &portico.Media{Type: "application/pdf", URL: "https://example.com/a.pdf"}, true},
		{"file id without type", &portico.Media{FileID: "file_011CNha8iCJcU1wXNR6q4V8w"}, true},
		{"nil", nil, false},
		{"no source", &portico.Media{Type: "application/pdf"}, false},
		{"two sources", &portico.Media{Type: "application/pdf", Data: pdf, URL: "https://example.com/a.pdf"}, false},
		{"data without type", &portico.Media{Data: pdf}, false},
	} {
		req := &portico.Request{Messages: []portico.Message{doc(tc.m)}}
		err := req.Validate()
		if tc.ok != (err == nil) || !tc.ok && (!errors.Is(err, portico.ErrPermanent) || !portico.NothingSent(err)) {
			t.Errorf("%s: Validate() = %v, want ok %v (else Permanent, nothing sent)", tc.name, err, tc.ok)
		}
	}
}

// TestMediaModalities: a request's document and audio parts are its
// modalities; Fits leaves out a route that does not read them, and Size
// counts their bytes.
func TestMediaModalities(t *testing.T) {
	m := &portico.Media{Type: "application/pdf", Data: make([]byte, 1000), Name: "a.pdf"}
	req := &portico.Request{Messages: []portico.Message{doc(m), {Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartAudio, Media: &portico.Media{Type: "audio/wav", Data: []byte("RIFF")}}}}}}
	if got, want := req.Modalities(), portico.ModalityText|portico.ModalityDocument|portico.ModalityAudio; got != want || got.String() != "text+document+audio" {
		t.Errorf("Modalities() = %v, want %v", got, want)
	}
	if got := req.Size(); got != len(req.Messages[0].Role)+len("Summarize.")+len("application/pdf")+1000+len("a.pdf")+len(req.Messages[1].Role)+len("audio/wav")+4 {
		t.Errorf("Size() = %d", got)
	}
	reads := portico.Capabilities{Modalities: portico.ModalityText | portico.ModalityDocument | portico.ModalityAudio}
	if err := reads.Fits(req, 10); err != nil {
		t.Errorf("Fits on a route that reads documents and audio = %v, want nil", err)
	}
	for _, c := range []portico.Capabilities{{}, {Modalities: portico.ModalityText | portico.ModalityDocument}, {Modalities: portico.ModalityText | portico.ModalityImage | portico.ModalityAudio}} {
		if err := c.Fits(req, 10); !errors.Is(err, portico.ErrIncompatible) {
			t.Errorf("Fits on a route reading %v = %v, want Incompatible (modality)", c.Modalities, err)
		}
	}
	for m, want := range map[portico.Modality]string{0: "none", portico.ModalityText: "text", portico.ModalityText | portico.ModalityImage: "text+image", portico.ModalityDocument: "document", 1 << 6: "Modality(64)"} {
		if got := m.String(); got != want {
			t.Errorf("Modality(%d).String() = %q, want %q", m, got, want)
		}
	}
}

// TestGroupFiltersRoutesByMedia: a fallback group sends a document to the
// route that reads documents only, and fails with an Incompatible error,
// calling none, when no route can read the request's audio.
func TestGroupFiltersRoutesByMedia(t *testing.T) {
	text, docs := modeltest.NewFake(modeltest.Answer("text")), modeltest.NewFake(modeltest.Answer("read"))
	g, err := fallback.New(fallback.Config{Routes: []portico.Route{
		{Name: "text", Model: text},
		{Name: "docs", Model: docs, Capabilities: portico.Capabilities{Modalities: portico.ModalityText | portico.ModalityDocument}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := g.Generate(t.Context(), &portico.Request{Messages: []portico.Message{doc(&portico.Media{Type: "application/pdf", URL: "https://example.com/a.pdf"})}})
	if err != nil || resp.Route != "docs" || text.Count() != 0 {
		t.Errorf("document: Generate = %+v, %v; text route called %d times; want docs' answer, text never called", resp, err, text.Count())
	}
	audio := &portico.Request{Messages: []portico.Message{{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartAudio, Media: &portico.Media{Type: "audio/mpeg", Data: []byte("ID3")}}}}}}
	_, err = g.Generate(t.Context(), audio)
	if !errors.Is(err, portico.ErrIncompatible) || !portico.NothingSent(err) || text.Count()+docs.Count() != 1 {
		t.Errorf("audio: Generate = %v after %d calls; want Incompatible, nothing sent, no new call", err, text.Count()+docs.Count())
	}
}
