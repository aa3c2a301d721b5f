package openai_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
)

// TestDocumentsAndAudio: document and audio parts become chat-completions
// content parts in the API's own format
// (https://platform.openai.com/docs/guides/pdf-files: {"type":"file",
// "file":{"filename","file_data":"data:application/pdf;base64,..."}} or
// {"file_id"}; https://platform.openai.com/docs/guides/audio:
// {"type":"input_audio","input_audio":{"data","format":"wav"|"mp3"}}); a
// plain-text document is its text. What chat completions cannot read (a
// document by URL, audio other than WAV or MP3 data) is refused before
// sending, as Incompatible.
func TestDocumentsAndAudio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, m := startPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m"}}})
		ask := func(p portico.Part) error {
			_, err := m.Generate(t.Context(), &portico.Request{Model: "m", MaxOutputTokens: 16, Messages: []portico.Message{
				{Role: portico.RoleUser, Content: []portico.Part{p, {Kind: portico.PartText, Text: "Summarize."}}}}})
			return err
		}
		for _, tc := range []struct {
			part portico.Part
			wire string
		}{
			{portico.Part{Kind: portico.PartDocument, Media: &portico.Media{Type: "application/pdf", Data: []byte("%PDF-1.7"), Name: "a.pdf"}},
				`{"file":{"file_data":"data:application/pdf;base64,JVBERi0xLjc=","filename":"a.pdf"},"type":"file"}`},
			{portico.Part{Kind: portico.PartDocument, Media: &portico.Media{FileID: "file-6F2ksmvXxt4VdoqmHRw6kL"}},
				`{"file":{"file_id":"file-6F2ksmvXxt4VdoqmHRw6kL"},"type":"file"}`},
			{portico.Part{Kind: portico.PartDocument, Media: &portico.Media{Type: "text/plain", Data: []byte("The grass is green.")}},
				`{"text":"The grass is green.","type":"text"}`},
			{portico.Part{Kind: portico.PartAudio, Media: &portico.Media{Type: "audio/wav", Data: []byte("RIFF")}},
				`{"input_audio":{"data":"UklGRg==","format":"wav"},"type":"input_audio"}`},
		} {
			if err := ask(tc.part); err != nil {
				t.Fatalf("%v %+v: %v", tc.part.Kind, tc.part.Media, err)
			}
			reqs := srv.Requests()
			if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, tc.wire) {
				t.Errorf("body %s\nlacks %s", body, tc.wire)
			}
		}
		for _, p := range []portico.Part{
			{Kind: portico.PartDocument, Media: &portico.Media{Type: "application/pdf", URL: "https://example.com/a.pdf"}},
			{Kind: portico.PartAudio, Media: &portico.Media{Type: "audio/flac", Data: []byte("fLaC")}},
			{Kind: portico.PartAudio, Media: &portico.Media{Type: "audio/wav", FileID: "file-1"}},
		} {
			if err := ask(p); !errors.Is(err, portico.ErrIncompatible) || !portico.NothingSent(err) {
				t.Errorf("%v %+v: %v, want Incompatible, nothing sent", p.Kind, p.Media, err)
			}
		}
		if n := len(srv.Requests()); n != 4 {
			t.Errorf("the fake saw %d requests, want 4", n)
		}
	})
}
