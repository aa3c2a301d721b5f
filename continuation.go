package portico

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/portico-llm/portico/internal/enum"
)

// Continuation says whether, and how, a route continues an answer that broke
// off on the way to the caller (see [Request.ContinueOnBreak] and
// [Request.Prefix]). A route declares it in [Capabilities.Continuation];
// the zero value takes no continuation.
type Continuation uint8

// The ways a route continues an answer. Both send the delivered text, its
// trailing white space removed, as a last assistant message.
const (
	// ContinueNone: the route takes no continuation ([Capabilities.Fits]
	// refuses a request with a Prefix, Reason "continuation").
	ContinueNone Continuation = iota
	// ContinueInstruct: the assistant message is followed by a user message,
	// [ContinueInstruction], asking the model to go on exactly from there:
	// for APIs without prefill, such as OpenAI's.
	ContinueInstruct
	// ContinuePrefill: the assistant message is the start of the answer,
	// which the model continues (a prefill): Anthropic's Messages API, and
	// OpenAI-compatible servers that continue a trailing assistant message
	// (see package provider/openai's Config.Prefill).
	ContinuePrefill
)

// String returns "none", "instruct" or "prefill".
func (c Continuation) String() string { return enum.Name(continuationNames[:], c, "Continuation") }

var continuationNames = [...]string{ContinueNone: "none", ContinueInstruct: "instruct", ContinuePrefill: "prefill"}

// ContinueInstruction is the user message that follows the delivered text
// under [ContinueInstruct].
const ContinueInstruction = "Your answer above was cut off. Continue it exactly where it stops: " +
	"do not repeat any of it, do not start over, and add nothing before the continuation."

// sentPrefix is the part of prefix a continuation request sends: prefix
// without its trailing white space, which Anthropic refuses in a prefill
// ("final assistant content cannot end with trailing whitespace") and which
// a tokenizer would split badly anyway.
func sentPrefix(prefix string) string { return strings.TrimRightFunc(prefix, unicode.IsSpace) }

// continuationFor returns a copy of req whose messages end with req.Prefix in
// the form mode says. An expression of the same prefix already at the end of
// req.Messages (a routing layer outside put it there) is replaced, so that
// nested routing layers express it once, in the innermost route's form.
func continuationFor(req *Request, mode Continuation) *Request {
	c := req.Clone()
	sent := sentPrefix(req.Prefix)
	msgs := withoutPrefix(req.Messages, sent)
	if sent == "" { // nothing to continue from: the answer starts anew
		c.Messages = msgs
		return c
	}
	out := make([]Message, len(msgs), len(msgs)+2)
	copy(out, msgs)
	out = append(out, Text(RoleAssistant, sent))
	if mode != ContinuePrefill {
		out = append(out, Text(RoleUser, ContinueInstruction))
	}
	c.Messages = out
	return c
}

// withoutPrefix returns msgs without the expression of the prefix sent at
// their end, in either form, when they end with one.
func withoutPrefix(msgs []Message, sent string) []Message {
	n := len(msgs)
	if n >= 2 && isText(&msgs[n-1], RoleUser, ContinueInstruction) && isText(&msgs[n-2], RoleAssistant, sent) {
		return msgs[:n-2]
	}
	if n >= 1 && isText(&msgs[n-1], RoleAssistant, sent) {
		return msgs[:n-1]
	}
	return msgs
}

// isText reports whether m is a message of role with the one text part text.
func isText(m *Message, role Role, text string) bool {
	return m.Role == role && len(m.ToolCalls) == 0 && len(m.Content) == 1 &&
		m.Content[0].Kind == PartText && m.Content[0].Text == text
}

// ErrRestart is matched (errors.Is) by the [InvalidResponse] error of a
// continuation that starts the answer over and contradicts the text the
// caller already has (see [Seam]).
var ErrRestart = errors.New("portico: the continuation starts the answer over")

// The bounds of [Seam]'s rules, in bytes.
const (
	seamProbe      = 16  // the start of the answer that, repeated, marks a restart
	seamMinOverlap = 8   // the shortest repeated tail trimmed: "very very" may be meant
	seamMaxOverlap = 128 // the longest repeated tail trimmed
)

// Seam joins a continuation to the text the caller already has, Delivered,
// so that the caller sees one answer. With prefix what the request sent
// (Delivered without its trailing white space), a continuation that, in
// this order:
//
//   - starts with the whole prefix, or ends within it, has the repetition
//     dropped;
//   - starts with the prefix's first 16 bytes but departs from it later is
//     refused: an [InvalidResponse] error wrapping [ErrRestart];
//   - starts with a tail of the prefix of 8 to 128 bytes, beginning at a
//     word's start, has the longest such tail dropped;
//
// then has Delivered's trailing white space dropped from its start, as far
// as it agrees. A Seam holds the continuation's start back until these
// rules decide, then passes every piece unchanged; the zero Seam passes
// everything. A Seam is used by one goroutine. The rules' reasons are in
// the package doc ("Streams").
type Seam struct {
	// Delivered is the text the caller already has; set it before the
	// first call to Next.
	Delivered string

	held    []byte
	decided bool
}

// Next takes the next piece of the continuation's text and returns what to
// deliver now: "" while the start is held back, then the text joined by the
// rules, then each piece as it is. Its error is the refusal of a restart.
func (s *Seam) Next(text string) (string, error) {
	if s.decided {
		return text, nil
	}
	s.held = append(s.held, text...)
	return s.decide(false)
}

// End returns what the Seam still holds when the continuation ends, joined
// by the rules, and the refusal of a restart.
func (s *Seam) End() (string, error) {
	if s.decided {
		return "", nil
	}
	return s.decide(true)
}

// Rest returns the part of the whole continuation text that the rules keep:
// what a fresh Seam over text delivers in all. It does not modify s.
func (s Seam) Rest(text string) (string, error) {
	t := Seam{Delivered: s.Delivered}
	a, err := t.Next(text)
	if err != nil {
		return "", err
	}
	b, err := t.End()
	return a + b, err
}

// decide applies the rules to the text held when they can decide (or final);
// otherwise it returns "" and keeps holding.
func (s *Seam) decide(final bool) (string, error) {
	held := string(s.held)
	cut, ok, err := seamCut(s.Delivered, held, final)
	if !ok {
		return "", err
	}
	s.decided, s.held = true, nil
	return held[cut:], err
}

// seamCut applies the rules to n, the start of a continuation of delivered
// (all of it when final): how many bytes of n to drop, whether that is
// decided (more of n could not change it), and the refusal of a restart.
func seamCut(delivered, n string, final bool) (int, bool, error) {
	sent := sentPrefix(delivered)
	cut, ok, err := repeatCut(sent, n, final)
	if !ok || err != nil {
		return 0, ok, err
	}
	i, ok := spaceCut(delivered[len(sent):], n[cut:], final)
	if !ok {
		return 0, false, nil
	}
	return cut + i, true, nil
}

// repeatCut is seamCut's first step: how many bytes at n's start repeat
// sent, whether that is decided, and the refusal of a restart.
func repeatCut(sent, n string, final bool) (int, bool, error) {
	switch {
	case sent == "":
		return 0, true, nil
	case strings.HasPrefix(n, sent): // started over and agrees: drop the repetition
		return len(sent), true, nil
	case strings.HasPrefix(sent, n): // may still be a repetition; at the end, it was one
		return len(n), final, nil
	case len(sent) > seamProbe && strings.HasPrefix(n, sent[:seamProbe]):
		return 0, true, &Error{Class: InvalidResponse, Reason: "continuation starts over", Err: ErrRestart}
	}
	k, open := overlap(sent, n)
	return k, final || !open, nil
}

// spaceCut is seamCut's second step: how many bytes at rest's start repeat
// ws, the white space the caller has and the request did not send, and
// whether that is decided (rest may still run on into ws).
func spaceCut(ws, rest string, final bool) (int, bool) {
	i := commonPrefix(ws, rest)
	return i, final || i < len(rest) || i == len(ws)
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// overlap returns the longest k, from seamMinOverlap to seamMaxOverlap and
// below len(sent), such that sent ends with n[:k] and that tail begins at a
// word's start in sent and holds more than white space; and whether a
// longer one is still possible, n being a prefix of a longer tail that
// qualifies.
func overlap(sent, n string) (k int, open bool) {
	limit := min(len(sent)-1, seamMaxOverlap)
	for j := limit; j >= seamMinOverlap; j-- {
		tail := sent[len(sent)-j:]
		if !repeatable(sent, j) {
			continue
		}
		if j > len(n) {
			if strings.HasPrefix(tail, n) {
				open = true
			}
			continue
		}
		if n[:j] == tail {
			return j, open
		}
	}
	return 0, open
}

// repeatable reports whether the tail of sent of j bytes may count as a
// repetition: it starts a word and holds more than white space.
func repeatable(sent string, j int) bool {
	return wordStart(sent, len(sent)-j) && strings.TrimSpace(sent[len(sent)-j:]) != ""
}

// wordStart reports whether a word (or a run of white space or punctuation)
// starts at byte i of s: i is the first byte of a rune, and the runes on
// either side of i are not both letters or digits.
func wordStart(s string, i int) bool {
	if i <= 0 {
		return true
	}
	if !utf8.RuneStart(s[i]) {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	after, _ := utf8.DecodeRuneInString(s[i:])
	return !(isWord(before) && isWord(after))
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
