package fakegemini

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
)

// embedRequest is the part of a batchEmbedContents request the server
// reads (the Gemini API reference's BatchEmbedContentsRequest): each
// request's content and outputDimensionality.
type embedRequest struct {
	Requests []struct {
		Content struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"content"`
		OutputDimensionality int `json:"outputDimensionality"`
	} `json:"requests"`
}

// embed answers batchEmbedContents: {"embeddings": [{"values": [...]}]},
// a deterministic unit vector per request, of its outputDimensionality (8
// by default), after the model's faults.
func (c *call) embed() {
	if c.serveFault() {
		return
	}
	type values struct {
		Values []float32 `json:"values"`
	}
	out := make([]values, len(c.req.embed.Requests))
	for i, r := range c.req.embed.Requests {
		text := ""
		for _, p := range r.Content.Parts {
			text += p.Text
		}
		out[i].Values = vector(text, r.OutputDimensionality)
	}
	body, _ := json.Marshal(map[string]any{"embeddings": out})
	c.W.Header().Set("Content-Type", "application/json; charset=UTF-8")
	c.W.WriteHeader(http.StatusOK)
	c.W.Write(body)
}

// vector is text's unit vector of dims float32s (8 when dims <= 0), from
// an FNV-1a hash.
func vector(text string, dims int) []float32 {
	if dims <= 0 {
		dims = 8
	}
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d:%s", i, text)
		v[i] = float32(int64(h.Sum64()>>11)-(1<<52)) / (1 << 52)
		norm += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(norm))
	}
	return v
}
