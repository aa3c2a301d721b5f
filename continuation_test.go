package portico

import (
	"errors"
	"strings"
	"testing"
)

// The Seam's rules, one case each: what a continuation of delivered keeps.
func TestSeamRules(t *testing.T) {
	const answer = "The capital of France is Paris, a city"
	for _, tt := range []struct {
		name, delivered, next, want string
		restart                     bool
	}{
		{"a clean continuation", answer, " on the Seine.", " on the Seine.", false},
		{"started over, agreeing", answer, answer + " on the Seine.", " on the Seine.", false},
		{"started over, contradicting", answer, "The capital of France is Lyon.", "", true},
		{"the tail repeated", answer, " Paris, a city on the Seine.", " on the Seine.", false},
		{"a short word repeated is kept", "It was very", " very good", " very good", false},
		{"a tail inside a word is kept", "It was Parisian", "ian city", "ian city", false},
		{"the white space the caller has", "One.\n\n", "\n\nTwo.", "Two.", false},
		{"only what agrees of it", "One.\n\n", "\nTwo.", "Two.", false},
		{"other white space is kept", "One. ", "\nTwo.", "\nTwo.", false},
		{"a mid-word break", "I saw th", "e cat", "e cat", false},
		{"a short prefix repeated whole", "Hello", "Hello, world", ", world", false},
		{"nothing delivered", "", "Hello", "Hello", false},
		{"only white space delivered", "\n", "\nHello", "Hello", false},
		{"an empty continuation", answer, "", "", false},
		{"a continuation that stops in a repetition", "Hello there", "Hello", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Seam{Delivered: tt.delivered}.Rest(tt.next)
			if tt.restart {
				if ClassOf(err) != InvalidResponse || !errors.Is(err, ErrRestart) {
					t.Errorf("Rest(%q) = %q, %v; want an InvalidResponse error wrapping ErrRestart", tt.next, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Seam{%q}.Rest(%q) = %q, %v; want %q", tt.delivered, tt.next, got, err, tt.want)
			}
		})
	}
}

// Fed piece by piece, a Seam holds the start back until it can decide,
// then passes each piece as it is: what it delivers in all is Rest's.
func TestSeamHoldsThenPasses(t *testing.T) {
	s := Seam{Delivered: "The capital of France is Paris, a city"}
	var out []string
	for _, p := range []string{" Paris,", " a", " city", " on", " the", " Seine."} {
		got, err := s.Next(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got)
	}
	end, err := s.End()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"", "", "", " on", " the", " Seine."}; strings.Join(out, "|") != strings.Join(want, "|") || end != "" {
		t.Errorf("Next delivered %q, End %q; want %q, then nothing", out, end, want)
	}
}

// However the continuation is cut into pieces, a Seam delivers what Rest
// does, or the same refusal.
func FuzzSeam(f *testing.F) {
	f.Add("The capital of France is Paris, a city", " Paris, a city on the Seine.", uint8(3))
	f.Add("One.\n\n", "\n\nTwo.", uint8(1))
	f.Add("The capital of France is Paris, a city", "The capital of France is Lyon.", uint8(5))
	f.Add("Hello", "Hello, world", uint8(2))
	f.Fuzz(func(t *testing.T, delivered, next string, step uint8) {
		want, werr := Seam{Delivered: delivered}.Rest(next)
		s := Seam{Delivered: delivered}
		var got strings.Builder
		var err error
		n := int(step%16) + 1
		for i := 0; i < len(next) && err == nil; i += n {
			var out string
			out, err = s.Next(next[i:min(i+n, len(next))])
			got.WriteString(out)
		}
		if err == nil {
			var out string
			out, err = s.End()
			got.WriteString(out)
		}
		if (err != nil) != (werr != nil) || err == nil && got.String() != want {
			t.Fatalf("pieces of %d: %q, %v; Rest: %q, %v", n, got.String(), err, want, werr)
		}
		if err == nil && !strings.HasSuffix(next, want) {
			t.Fatalf("Rest %q is not a tail of the continuation %q", want, next)
		}
	})
}

// RequestFor expresses a Prefix in the route's form, once: a prefill ends
// with the sent prefix (its trailing white space removed), an instruction
// adds ContinueInstruction, and a request that already expresses it (a
// routing layer outside did) is expressed again in this route's form only.
func TestRequestForContinuation(t *testing.T) {
	req := &Request{Model: "m", Messages: []Message{Text(RoleUser, "q")}, Prefix: "The answer is \n"}
	prefill := &Route{Name: "p", ModelName: "pm", Capabilities: Capabilities{Continuation: ContinuePrefill}}
	instruct := &Route{Name: "i", Capabilities: Capabilities{Continuation: ContinueInstruct}}
	roles := func(r *Request) string {
		var b []string
		for _, m := range r.Messages {
			b = append(b, string(m.Role)+":"+m.Content[0].Text)
		}
		return strings.Join(b, "|")
	}
	p := prefill.RequestFor(req)
	if got, want := roles(p), "user:q|assistant:The answer is"; got != want || p.Model != "pm" || p.Prefix != req.Prefix {
		t.Errorf("prefill: %q, model %q, prefix %q; want %q, pm, the prefix", got, p.Model, p.Prefix, want)
	}
	i := instruct.RequestFor(p)
	if got, want := roles(i), "user:q|assistant:The answer is|user:"+ContinueInstruction; got != want {
		t.Errorf("instruct over a prefill: %q, want %q", got, want)
	}
	if got := roles(prefill.RequestFor(i)); got != "user:q|assistant:The answer is" {
		t.Errorf("prefill over an instruction: %q, want one prefill", got)
	}
	if len(req.Messages) != 1 || req.Model != "m" {
		t.Errorf("the caller's request was modified: %+v", req)
	}
	if err := (&Capabilities{}).Fits(req, 1); ClassOf(err) != Incompatible || err.Error() == "" {
		t.Errorf("Fits of a Prefix on a route without Continuation = %v, want Incompatible", err)
	}
	if err := prefill.Capabilities.Fits(req, 1); err != nil {
		t.Errorf("Fits of a Prefix on a prefill route = %v, want nil", err)
	}
	if err := (&Capabilities{Continuation: 3}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "portico: Capabilities.Continuation") {
		t.Errorf("Validate of Continuation 3 = %v, want an error naming the field", err)
	}
}
