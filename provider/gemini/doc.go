// Package gemini makes a [portico.Model] of the Gemini API through Google's
// Go SDK, google.golang.org/genai.
package gemini
