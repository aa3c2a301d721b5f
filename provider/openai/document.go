package openai

import (
	"cmp"
	"encoding/base64"
	"errors"

	oai "github.com/openai/openai-go/v3"
	"github.com/portico-llm/portico"
)

// errMedia is the Incompatible error of a part chat completions cannot
// read: a document by URL, audio by URL or file id or in a format other
// than WAV and MP3. Another provider may.
var errMedia error = &portico.Error{Class: portico.Incompatible, Reason: "media the provider cannot read", NotSent: true}

// audioFormats maps the audio media types chat completions reads to its
// input_audio format ("Currently supports wav and mp3", the SDK's
// ChatCompletionContentPartInputAudioInputAudioParam).
var audioFormats = map[string]string{"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}

// media checks req's document and audio parts against what chat
// completions reads, before sending (malformed Media is Request.Validate's
// to refuse, and params refuses it too).
func media(req *portico.Request) error {
	for i := range req.Messages {
		for _, p := range req.Messages[i].Content {
			m := p.Media
			switch {
			case m == nil || p.Kind != portico.PartDocument && p.Kind != portico.PartAudio:
			case p.Kind == portico.PartDocument && m.URL != "",
				p.Kind == portico.PartAudio && (len(m.Data) == 0 || audioFormats[m.Type] == ""):
				return errMedia
			}
		}
	}
	return nil
}

// mediaPart encodes a document or audio part of a user message
// (https://platform.openai.com/docs/guides/pdf-files, "file" parts;
// https://platform.openai.com/docs/guides/audio, "input_audio"): a
// plain-text document by data as a text part, another document by data as
// a data: URL in file_data or by file_id, audio by base64 data.
func mediaPart(p *portico.Part) (oai.ChatCompletionContentPartUnionParam, error) {
	m := p.Media
	switch {
	case m == nil:
		return oai.ChatCompletionContentPartUnionParam{}, errors.New("document or audio part without Media")
	case p.Kind == portico.PartAudio:
		return oai.InputAudioContentPart(oai.ChatCompletionContentPartInputAudioInputAudioParam{
			Data: base64.StdEncoding.EncodeToString(m.Data), Format: audioFormats[m.Type]}), nil
	case m.FileID != "":
		return oai.FileContentPart(oai.ChatCompletionContentPartFileFileParam{FileID: oai.String(m.FileID)}), nil
	case m.Type == "text/plain":
		return oai.TextContentPart(string(m.Data)), nil
	}
	return oai.FileContentPart(oai.ChatCompletionContentPartFileFileParam{
		FileData: oai.String("data:" + m.Type + ";base64," + base64.StdEncoding.EncodeToString(m.Data)),
		Filename: oai.String(cmp.Or(m.Name, "document.pdf")),
	}), nil
}
