package anthropic

import (
	"encoding/base64"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/portico-llm/portico"
)

// The media types the Messages API reads as documents
// (https://docs.claude.com/en/docs/build-with-claude/pdf-support: a PDF
// by base64 data, URL or Files API file id; a plain-text document by its
// text, or a file id).
const (
	mediaPDF  = "application/pdf"
	mediaText = "text/plain"
)

// filesBeta is the anthropic-beta value that a request naming a Files API
// file needs (https://docs.claude.com/en/docs/build-with-claude/files).
const filesBeta = "files-api-2025-04-14"

// errMedia is the Incompatible error of a part the API cannot read: audio,
// a document of another type, plain text by URL. Another provider may.
var errMedia error = &portico.Error{Class: portico.Incompatible, Reason: "media the provider cannot read", NotSent: true}

// media checks req's document and audio parts against what the API reads,
// before sending, and reports whether any names a Files API file. Parts
// whose Media is malformed are Request.Validate's to refuse (Fits runs
// it), and params refuses them too.
func media(req *portico.Request) (files bool, err error) {
	for i := range req.Messages {
		for j := range req.Messages[i].Content {
			p := &req.Messages[i].Content[j]
			switch {
			case p.Kind == portico.PartAudio:
				return false, errMedia
			case p.Kind != portico.PartDocument || p.Media == nil:
				continue
			case p.Media.FileID != "":
				files = true
			case p.Media.Type == mediaPDF, p.Media.Type == mediaText && len(p.Media.Data) > 0:
			default:
				return false, errMedia
			}
		}
	}
	return files, nil
}

// documentBlock encodes a non-nil document as its source: base64 data, plain
// text, a URL or a file id; its Name as the title.
func documentBlock(m *portico.Media) *sdk.DocumentBlockParam {
	d := &sdk.DocumentBlockParam{}
	switch {
	case m.FileID != "":
		d.Source.OfFile = &sdk.FileDocumentSourceParam{FileID: m.FileID}
	case m.URL != "":
		d.Source.OfURL = &sdk.URLPDFSourceParam{URL: m.URL}
	case m.Type == mediaText:
		d.Source.OfText = &sdk.PlainTextSourceParam{Data: string(m.Data)}
	default:
		d.Source.OfBase64 = &sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(m.Data)}
	}
	if m.Name != "" {
		d.Title = sdk.String(m.Name)
	}
	return d
}
