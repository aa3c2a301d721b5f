package fakegemini

import (
	"encoding/json"
	"net/http"

	"github.com/portico-llm/portico/modeltest/internal/fakegen"
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
		out[i].Values = fakegen.Vector(text, r.OutputDimensionality)
	}
	body, _ := json.Marshal(map[string]any{"embeddings": out})
	c.W.Header().Set("Content-Type", "application/json; charset=UTF-8")
	c.W.WriteHeader(http.StatusOK)
	c.W.Write(body)
}
