package effect

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/gowebpki/jcs"

	"github.com/portico-llm/portico"
)

// Key is an execution key: what a [Runner] runs an effect at most once for.
// Build one with [StepKey] (the key names the step; the arguments are a
// fingerprint recorded beside it, see [Runner.DoArgs]) or with [NewKey] and
// [KeyOf] (the key hashes the arguments: other arguments are another
// effect). The empty Key is refused by every Runner method.
//
// Its text is made of length-prefixed parts, "<len>:<operation id>/<len>:<part>/...",
// the lengths in bytes, so that operation "a/b" with step "c" and operation
// "a" with step "b/c" stay apart; [NewKey] ends it with the arguments'
// SHA-256 in hex (64 digits, no length prefix, so it never equals a
// StepKey). The hash hides the arguments, which may hold private content,
// from stores and logs.
type Key string

// ErrArguments is wrapped by the error of [NewKey], [Fingerprint] and
// [Runner.DoArgs] when the arguments are not valid JSON (RFC 8785
// canonicalization rejects them), ErrOperation by that of [NewKey] and
// [StepKey] when the operation id is empty (without one at the application
// boundary there is nothing to deduplicate on), and ErrKey by every
// [Runner] method given the empty Key.
var (
	ErrArguments = errors.New("effect: tool arguments are not valid JSON")
	ErrOperation = errors.New("effect: empty operation id")
	ErrKey       = errors.New("effect: empty execution key")
)

// StepKey returns the execution key of one step of the operation
// operationID: step names it as the application identifies it (the agent
// step's number, the tool's name, a slot in a plan), each part kept apart by
// its length. The arguments the model wrote are not part of it: a replay of
// the step by another model, with other arguments, has the same key, and
// [Runner.DoArgs] returns the step's recorded result, saying that the
// arguments differed, instead of running the effect again. It returns a
// Permanent *portico.Error wrapping ErrOperation when operationID is empty,
// or ErrKey when step is empty. StepKey is safe for concurrent use.
func StepKey(operationID string, step ...string) (Key, error) {
	if operationID == "" {
		return "", &portico.Error{Class: portico.Permanent, Reason: "no operation id", Err: ErrOperation}
	}
	if len(step) == 0 {
		return "", &portico.Error{Class: portico.Permanent, Reason: "no step", Err: ErrKey}
	}
	n := 12 + len(operationID)
	for _, p := range step {
		n += 12 + len(p)
	}
	b := appendPart(make([]byte, 0, n), operationID)
	for _, p := range step {
		b = appendPart(append(b, '/'), p)
	}
	return Key(b), nil
}

func appendPart(b []byte, p string) []byte {
	b = strconv.AppendInt(b, int64(len(p)), 10)
	b = append(b, ':')
	return append(b, p...)
}

// Fingerprint returns the SHA-256, in hex, of args canonicalized with the
// JSON Canonicalization Scheme (RFC 8785, github.com/gowebpki/jcs: object
// keys sorted by UTF-16 code units, numbers in ECMAScript form, minimal
// string escapes): arguments equal as JSON values, whatever their key
// order, white space or number spelling, have the same fingerprint. It
// returns a Permanent *portico.Error wrapping ErrArguments when args is not
// valid JSON. Fingerprint is safe for concurrent use.
func Fingerprint(args json.RawMessage) (string, error) {
	sum, err := fingerprint(args)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

func fingerprint(args json.RawMessage) ([sha256.Size]byte, error) {
	canon, err := jcs.Transform(args)
	if err != nil {
		return [sha256.Size]byte{}, &portico.Error{Class: portico.Permanent, Reason: "tool arguments not canonicalizable", Err: portico.Join(ErrArguments, err)}
	}
	return sha256.Sum256(canon), nil
}

// NewKey returns the argument-keyed execution key of tool called with args
// within the operation operationID: the key ends with args' [Fingerprint],
// so the same call with arguments equal as JSON values has the same key,
// and a call with other arguments is another effect, run again. Use it
// for effects whose identity is their arguments (a deduplicated
// notification); use [StepKey] when a replayed step may be written with
// other arguments (another model after a fallback) and must not run twice.
// It returns a Permanent *portico.Error wrapping ErrOperation or
// ErrArguments on bad input. NewKey is safe for concurrent use.
func NewKey(operationID, tool string, args json.RawMessage) (Key, error) {
	if operationID == "" {
		return "", &portico.Error{Class: portico.Permanent, Reason: "no operation id", Err: ErrOperation}
	}
	sum, err := fingerprint(args)
	if err != nil {
		return "", err
	}
	b := make([]byte, 0, 24+len(operationID)+len(tool)+2*len(sum))
	b = appendPart(b, operationID)
	b = appendPart(append(b, '/'), tool)
	b = append(b, '/')
	b = hex.AppendEncode(b, sum[:])
	return Key(b), nil
}

// KeyOf returns the argument-keyed execution key of a tool call the model
// asked for, within the request's operation (portico.Identity.OperationID):
// NewKey(operationID, call.Name, call.Arguments). A step replayed with other
// arguments gets another key: see [StepKey] for the key of a step.
func KeyOf(operationID string, call portico.ToolCall) (Key, error) {
	return NewKey(operationID, call.Name, call.Arguments)
}
