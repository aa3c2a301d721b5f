package fakeopenai

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico/modeltest/internal/fakegen"
)

// embeddingsRequest is the part of a POST /v1/embeddings request the server
// reads (the API reference's CreateEmbeddingRequest).
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     int             `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
}

// decodeEmbeddings reads an embeddings request as a chatRequest whose
// embeddings field is set.
func decodeEmbeddings(body []byte) (string, bool, *chatRequest, error) {
	e := new(embeddingsRequest)
	err := json.Unmarshal(body, e)
	return e.Model, false, &chatRequest{Model: e.Model, embeddings: e}, err
}

// inputs returns the texts to embed: input is a string, an array of
// strings, or arrays of token ids (each counted as one text).
func (e *embeddingsRequest) inputs() ([]string, bool) {
	var one string
	if json.Unmarshal(e.Input, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(e.Input, &many) == nil && len(many) > 0 {
		return many, true
	}
	var tokens []json.RawMessage
	if json.Unmarshal(e.Input, &tokens) == nil && len(tokens) > 0 {
		out := make([]string, len(tokens))
		for i, t := range tokens {
			out[i] = string(t)
		}
		return out, true
	}
	return nil, false
}

// embed answers an embeddings request: a deterministic unit vector per
// input, of the requested dimensions (8 by default), as floats or as
// base64 little-endian float32s, with usage counted at 4 bytes a token.
func (c *call) embed() {
	e := c.req.embeddings
	texts, ok := e.inputs()
	if !ok {
		writeError(c.W, http.StatusBadRequest, "invalid_request_error", "", "input", "'input' must be a string or an array of strings or token arrays.")
		return
	}
	if c.ServeFault(c.statusBody) {
		return
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	tokens := 0
	data := make([]item, len(texts))
	for i, t := range texts {
		tokens += max(1, (len(t)+3)/4)
		v := fakegen.Vector(t, e.Dimensions) // 8 dims when none asked
		data[i] = item{Object: "embedding", Index: i, Embedding: v}
		if e.EncodingFormat == "base64" {
			var b bytes.Buffer
			binary.Write(&b, binary.LittleEndian, v)
			data[i].Embedding = base64.StdEncoding.EncodeToString(b.Bytes())
		}
	}
	body, _ := json.Marshal(map[string]any{"object": "list", "data": data, "model": e.Model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
	c.Reply(http.StatusOK, body)
}

// fileSeq numbers the uploaded files.
var fileSeq atomic.Int64

// serveFile answers POST /v1/files, a multipart upload of "file" with its
// "purpose", with the file object the API returns; it keeps nothing.
func serveFile(w http.ResponseWriter, r *http.Request) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "Expected a multipart/form-data body.")
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var name, purpose string
	size := int64(-1)
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "Malformed multipart body.")
			return
		}
		switch p.FormName() {
		case "purpose":
			b, _ := io.ReadAll(io.LimitReader(p, 64))
			purpose = string(b)
		case "file":
			name = p.FileName()
			size, _ = io.Copy(io.Discard, p)
		}
	}
	if size < 0 || purpose == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "'file' and 'purpose' are required.")
		return
	}
	body, _ := json.Marshal(map[string]any{"id": "file-" + strconv.FormatInt(fileSeq.Add(1), 10), "object": "file", "bytes": size,
		"created_at": time.Now().Unix(), "filename": name, "purpose": purpose, "status": "processed"})
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}
