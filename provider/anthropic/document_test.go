package anthropic_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
)

// TestDocuments: document parts become document blocks in the API's own
// format (https://docs.claude.com/en/docs/build-with-claude/pdf-support):
// a PDF by base64 data, a plain-text document by its text, a PDF by URL,
// a Files API file by id with the anthropic-beta header the fake requires;
// audio, and plain text by URL, which the API does not read, are refused
// before sending, as Incompatible.
func TestDocuments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, m := startPipe(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m"}}})
		ask := func(p portico.Part) (*portico.Response, error) {
			return m.Generate(t.Context(), &portico.Request{Model: "m", MaxOutputTokens: 16, Messages: []portico.Message{
				{Role: portico.RoleUser, Content: []portico.Part{p, {Kind: portico.PartText, Text: "Summarize."}}}}})
		}
		for _, tc := range []struct {
			media *portico.Media
			block string // as the body carries it
			input int    // tokens the fake counts: the document's, "Summarize." and 3
		}{
			{&portico.Media{Type: "application/pdf", Data: []byte("%PDF-1.7 two words"), Name: "a.pdf"},
				`{"source":{"data":"JVBERi0xLjcgdHdvIHdvcmRz","media_type":"application/pdf","type":"base64"},"title":"a.pdf","type":"document"}`, 3 + 1 + 3},
			{&portico.Media{Type: "text/plain", Data: []byte("The grass is green.")},
				`{"source":{"data":"The grass is green.","media_type":"text/plain","type":"text"},"type":"document"}`, 4 + 1 + 3},
			{&portico.Media{Type: "application/pdf", URL: "https://example.com/a.pdf"},
				`{"source":{"url":"https://example.com/a.pdf","type":"url"},"type":"document"}`, 1 + 3},
			{&portico.Media{FileID: "file_011CNha8iCJcU1wXNR6q4V8w"},
				`{"source":{"file_id":"file_011CNha8iCJcU1wXNR6q4V8w","type":"file"},"type":"document"}`, 1 + 3},
		} {
			resp, err := ask(portico.Part{Kind: portico.PartDocument, Media: tc.media})
			if err != nil {
				t.Fatalf("%+v: %v", tc.media, err)
			}
			reqs := srv.Requests()
			if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, tc.block) || resp.Usage.InputTokens != tc.input {
				t.Errorf("body %s\nwant %s; input tokens %d, want %d", body, tc.block, resp.Usage.InputTokens, tc.input)
			}
		}
		for _, p := range []portico.Part{
			{Kind: portico.PartAudio, Media: &portico.Media{Type: "audio/wav", Data: []byte("RIFF")}},
			{Kind: portico.PartDocument, Media: &portico.Media{Type: "text/plain", URL: "https://example.com/a.txt"}},
		} {
			if _, err := ask(p); !errors.Is(err, portico.ErrIncompatible) || !portico.NothingSent(err) {
				t.Errorf("%v %+v: %v, want Incompatible, nothing sent", p.Kind, p.Media, err)
			}
		}
		if n := len(srv.Requests()); n != 4 {
			t.Errorf("the fake saw %d requests, want 4", n)
		}
	})
}
