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

// Key is an execution key, operation_id + tool_name +
// canonical_arguments_hash (see the package documentation). Two calls of the same
// tool, in the same operation, with arguments that are equal as JSON values
// (whatever their key order, white space or number spelling) have the same
// Key. Build one with [NewKey] or [KeyOf].
//
// Its text is "<len>:<operation id>/<len>:<tool>/<sha256 hex>", the lengths
// in bytes: the length prefixes keep operation "a/b" with tool "c" apart from
// operation "a" with tool "b/c". The hash hides the arguments, which may hold
// private content, from stores and logs.
type Key string

// ErrArguments is wrapped by the error of [NewKey] when the arguments are not
// valid JSON (RFC 8785 canonicalization rejects them), and ErrOperation when
// the operation id is empty: without one at the application boundary there is
// nothing to deduplicate on.
var (
	ErrArguments = errors.New("effect: tool arguments are not valid JSON")
	ErrOperation = errors.New("effect: empty operation id")
)

// NewKey returns the execution key of tool called with args within the
// operation operationID. args is canonicalized with the JSON Canonicalization
// Scheme (RFC 8785, github.com/gowebpki/jcs: object keys sorted by UTF-16
// code units, numbers in ECMAScript form, minimal string escapes) and hashed
// with SHA-256. It returns a Permanent *portico.Error wrapping ErrOperation or
// ErrArguments on bad input. NewKey is safe for concurrent use.
func NewKey(operationID, tool string, args json.RawMessage) (Key, error) {
	if operationID == "" {
		return "", &portico.Error{Class: portico.Permanent, Reason: "no operation id", Err: ErrOperation}
	}
	canon, err := jcs.Transform(args)
	if err != nil {
		return "", &portico.Error{Class: portico.Permanent, Reason: "tool arguments not canonicalizable", Err: portico.Join(ErrArguments, err)}
	}
	sum := sha256.Sum256(canon)
	b := make([]byte, 0, 24+len(operationID)+len(tool)+2*len(sum))
	b = strconv.AppendInt(b, int64(len(operationID)), 10)
	b = append(b, ':')
	b = append(b, operationID...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(len(tool)), 10)
	b = append(b, ':')
	b = append(b, tool...)
	b = append(b, '/')
	b = hex.AppendEncode(b, sum[:])
	return Key(b), nil
}

// KeyOf returns the execution key of a tool call the model asked for, within
// the request's operation (portico.Identity.OperationID): NewKey(operationID,
// call.Name, call.Arguments).
func KeyOf(operationID string, call portico.ToolCall) (Key, error) {
	return NewKey(operationID, call.Name, call.Arguments)
}
