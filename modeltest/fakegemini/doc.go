// Package fakegemini is a Gemini API server for tests and examples.
package fakegemini
