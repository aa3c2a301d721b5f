package portico

// Media is the content of a document or audio [Part]: exactly one of Data,
// URL and FileID, and its media type. It is read-only once in a Request,
// as the Request's slices are.
//
// Adapters map it to their provider's form or refuse it before sending,
// as [Incompatible] (another route may take it): Anthropic reads PDF
// documents by data, URL or file id and plain text by data, no audio;
// OpenAI's chat completions read PDF by data or file id (plain text by
// data as a text part) and WAV or MP3 audio by data; Gemini reads any of
// them by data (inline), URL or file URI. A route declares what it reads
// in [Capabilities].Modalities (ModalityDocument, ModalityAudio), and
// [Capabilities.Fits] leaves out the routes that cannot read a request's
// parts.
type Media struct {
	// Type is the media type: "application/pdf" or "text/plain" for a
	// document; "audio/wav", "audio/mpeg" (MP3), "audio/flac", ... for
	// audio. It may be empty only with a FileID whose provider knows it.
	Type string
	// Data is the content itself (adapters encode it in base64 where the
	// provider asks for it).
	Data []byte
	// URL is an https: URL the provider fetches.
	URL string
	// FileID names a file in the provider's own store (Anthropic's Files
	// API "file_...", OpenAI's "file-...", a Gemini file URI).
	FileID string
	// Name is the file's name or the document's title; optional.
	Name string
}

// size returns the bytes m carries to a provider, 0 for nil.
func (m *Media) size() int {
	if m == nil {
		return 0
	}
	return len(m.Type) + len(m.Data) + len(m.URL) + len(m.FileID) + len(m.Name)
}

// wellFormed reports whether m has exactly one source, and a type unless
// its source is a file id.
func (m *Media) wellFormed() bool {
	if m == nil {
		return false
	}
	sources := 0
	for _, set := range [...]bool{len(m.Data) > 0, m.URL != "", m.FileID != ""} {
		if set {
			sources++
		}
	}
	return sources == 1 && (m.Type != "" || m.FileID != "")
}

// errMalformedMedia is Request.Validate's error for a document or audio
// part without well-formed Media.
var errMalformedMedia error = &Error{Class: Permanent, Reason: "malformed media part", NotSent: true}

// validateMedia checks the media of msgs' document and audio parts.
func validateMedia(msgs []Message) error {
	for i := range msgs {
		for j := range msgs[i].Content {
			p := &msgs[i].Content[j]
			if (p.Kind == PartDocument || p.Kind == PartAudio) && !p.Media.wellFormed() {
				return errMalformedMedia
			}
		}
	}
	return nil
}
