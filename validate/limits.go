package validate

// limits bounds the work one JSON text may cause, checked by [limits.parse]
// as it decodes: the schema validator is then never handed a document whose
// nesting or numbers could cost unbounded time or memory (jsonschema compares
// numbers as math/big.Rat, and 1e1000000 costs tens of milliseconds per
// occurrence), and the parse itself stops at the first limit broken, so a
// hostile answer costs O(its length).
type limits struct {
	maxBytes, maxDepth, maxNumber, maxExponent int
}
