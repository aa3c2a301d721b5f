package fakeanthropic

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
)

// source is a document block's source, as the Messages API takes it
// (https://docs.claude.com/en/docs/build-with-claude/pdf-support and
// https://docs.claude.com/en/docs/build-with-claude/citations, "Plain text
// documents"): {"type":"base64","media_type":"application/pdf","data"},
// {"type":"text","media_type":"text/plain","data"}, {"type":"url","url"}
// or {"type":"file","file_id"} (Files API, behind the anthropic-beta
// header files-api-2025-04-14).
type source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
	FileID    string `json:"file_id"`
}

// tokens counts b's input tokens as the fake does: the words of text, of a
// tool result's content and of a plain-text document; a PDF counts the
// words of its bytes, and a document by URL or file nothing.
func (b *block) tokens() int {
	switch b.Type {
	case "text":
		return len(strings.Fields(b.Text))
	case "tool_result":
		return words(b.Content)
	case "document":
		var s source
		_ = json.Unmarshal(b.Source, &s)
		if s.Type == "base64" {
			pdf, _ := base64.StdEncoding.DecodeString(s.Data)
			return len(strings.Fields(string(pdf)))
		}
		return len(strings.Fields(s.Data))
	}
	return 0
}

// documentRefusal returns the API's message for a document block it
// refuses, or "".
func (c *call) documentRefusal() string {
	for i, m := range c.req.Messages {
		var blocks []block
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for j := range blocks {
			if blocks[j].Type != "document" {
				continue
			}
			at := "messages." + strconv.Itoa(i) + ".content." + strconv.Itoa(j) + ".document.source"
			if why := c.sourceRefusal(blocks[j].Source, at); why != "" {
				return why
			}
		}
	}
	return ""
}

// sourceRefusal returns the API's message for a document source (raw, at
// the path at) it refuses, or "".
func (c *call) sourceRefusal(raw json.RawMessage, at string) string {
	var s source
	if json.Unmarshal(raw, &s) != nil {
		return at + ": Field required"
	}
	switch {
	case s.Type == "base64" && s.MediaType == "application/pdf":
		if _, err := base64.StdEncoding.DecodeString(s.Data); err != nil || s.Data == "" {
			return at + ".base64.data: invalid base64 data"
		}
	case s.Type == "text" && s.MediaType == "text/plain":
	case s.Type == "url" && strings.HasPrefix(s.URL, "https://"):
	case s.Type == "file" && s.FileID != "":
		if !strings.Contains(c.R.Header.Get("anthropic-beta"), "files-api-2025-04-14") {
			return at + ".file: the Files API requires the anthropic-beta header files-api-2025-04-14"
		}
	default:
		return at + ": Input tag '" + s.Type + "' found using 'type' does not match any of the expected tags: 'base64', 'content', 'text', 'url', 'file'"
	}
	return ""
}
