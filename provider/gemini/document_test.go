package gemini_test

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakegemini"
)

// TestDocumentsAndAudio: document and audio parts become parts of the
// API's own format (https://ai.google.dev/gemini-api/docs/document-processing,
// https://ai.google.dev/gemini-api/docs/audio): data as inlineData (base64
// on the wire), a file id or URL as fileData's fileUri, with the media
// type.
func TestDocumentsAndAudio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, m := startPipe(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m"}}})
		for _, tc := range []struct {
			part portico.Part
			wire string
		}{
			{portico.Part{Kind: portico.PartDocument, Media: &portico.Media{Type: "application/pdf", Data: []byte("%PDF-1.7")}},
				`{"inlineData":{"data":"JVBERi0xLjc=","mimeType":"application/pdf"}}`},
			{portico.Part{Kind: portico.PartDocument, Media: &portico.Media{Type: "text/plain", Data: []byte("The grass is green.")}},
				`{"inlineData":{"data":"VGhlIGdyYXNzIGlzIGdyZWVuLg==","mimeType":"text/plain"}}`},
			{portico.Part{Kind: portico.PartAudio, Media: &portico.Media{Type: "audio/mp3", FileID: "https://generativelanguage.googleapis.com/v1beta/files/abc123"}},
				`{"fileData":{"fileUri":"https://generativelanguage.googleapis.com/v1beta/files/abc123","mimeType":"audio/mp3"}}`},
			{portico.Part{Kind: portico.PartAudio, Media: &portico.Media{Type: "audio/wav", Data: []byte("RIFF")}},
				`{"inlineData":{"data":"UklGRg==","mimeType":"audio/wav"}}`},
		} {
			_, err := m.Generate(t.Context(), &portico.Request{Model: "m", MaxOutputTokens: 16, Messages: []portico.Message{
				{Role: portico.RoleUser, Content: []portico.Part{tc.part, {Kind: portico.PartText, Text: "Summarize."}}}}})
			if err != nil {
				t.Fatalf("%v %+v: %v", tc.part.Kind, tc.part.Media, err)
			}
			reqs := srv.Requests()
			if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, tc.wire) {
				t.Errorf("body %s\nlacks %s", body, tc.wire)
			}
		}
	})
}
