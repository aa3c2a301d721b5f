package validate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/portico-llm/portico"
)

// suiteDir holds the required tests of JSON-Schema-Test-Suite, one
// directory per draft (see its README.md).
const suiteDir = "testdata/jsonschema-suite"

// suiteDrafts are the drafts providers accept, in the suite's directory
// names.
var suiteDrafts = []string{"draft4", "draft6", "draft7", "draft2019-09", "draft2020-12"}

// suiteSkipped are the test groups (file: description) that fetch a
// document from the suite's remote server (http://localhost:1234/...): a
// request's schema cannot make the validator fetch anything, so Portico
// refuses them (ErrSchema) by design. TestJSONSchemaSuite checks that each
// one is indeed refused for an external $ref, so this list cannot hide a
// defect. refRemote.json, all of whose groups need the server, is not
// vendored.
var suiteSkipped = map[string][]string{
	"draft2019-09": {
		"vocabulary.json: ignore unrecognized optional vocabulary",
		"vocabulary.json: schema that uses custom metaschema with with no validation vocabulary",
	},
	"draft2020-12": {
		"dynamicRef.json: $ref and $dynamicAnchor are independent of order - $defs first",
		"dynamicRef.json: $ref and $dynamicAnchor are independent of order - $ref first",
		"dynamicRef.json: $ref to $dynamicRef finds detached $dynamicAnchor",
		"dynamicRef.json: strict-tree schema, guards against misspelled properties",
		"dynamicRef.json: tests for implementation dynamic anchor and reference link",
		"vocabulary.json: ignore unrecognized optional vocabulary",
		"vocabulary.json: schema that uses custom metaschema with with no validation vocabulary",
	},
}

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// suiteCount is one draft's tally.
type suiteCount struct{ run, pass, skipped int }

// runSuite runs every case of the draft's vendored files through v.Check,
// the schema as the request's Schema and the data as the answer's text,
// and reports each case whose verdict differs from the suite's.
func runSuite(t *testing.T, v *Validator, draft, glob string, skipped []string) suiteCount {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(suiteDir, draft, glob))
	if err != nil || len(files) == 0 {
		t.Fatalf("no suite files %s for %s (%v)", glob, draft, err)
	}
	var n suiteCount
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var groups []suiteGroup
		if err := json.Unmarshal(raw, &groups); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, g := range groups {
			name := filepath.Base(file) + ": " + g.Description
			req := &portico.Request{Schema: &portico.Schema{JSON: withDraft(g.Schema, draft)}}
			if slices.Contains(skipped, name) {
				n.skipped += len(g.Tests)
				var le *jsonschema.LoadURLError
				if err := v.Prepare(req); !errors.As(err, &le) || le.Err != errNoLoad {
					t.Errorf("%s/%s: skipped as needing a remote, but Prepare = %v, want an external $ref refused", draft, name, err)
				}
				continue
			}
			for _, c := range g.Tests {
				n.run++
				err := v.Check(req, &portico.Response{Text: string(c.Data), FinishReason: portico.FinishStop})
				switch {
				case errors.Is(err, ErrSchema):
					t.Errorf("%s/%s: %s: schema refused: %v", draft, name, c.Description, err)
				case (err == nil) != c.Valid:
					t.Errorf("%s/%s: %s: Check(%s) = %v, want valid %v", draft, name, c.Description, c.Data, err, c.Valid)
				default:
					n.pass++
				}
			}
		}
	}
	return n
}

// Every required case of the official JSON-Schema-Test-Suite, for each
// draft providers accept, gets the suite's verdict from Portico's
// validator: each schema names its draft with $schema, and the validator
// honours it.
func TestJSONSchemaSuite(t *testing.T) {
	v := MustNew(Config{})
	for _, draft := range suiteDrafts {
		t.Run(draft, func(t *testing.T) {
			n := runSuite(t, v, draft, "*.json", suiteSkipped[draft])
			t.Logf("%s: %d cases run, %d pass, %d skipped (remote)", draft, n.run, n.pass, n.skipped)
		})
	}
}

// Patterns are ECMA-262 regular expressions: the suite's optional
// ecmascript-regex tests hold.
func TestJSONSchemaSuiteECMARegex(t *testing.T) {
	v := MustNew(Config{})
	for _, draft := range suiteDrafts {
		n := runSuite(t, v, draft, "optional/ecmascript-regex.json", nil)
		t.Logf("%s: %d cases run, %d pass", draft, n.run, n.pass)
	}
}

// suiteFormatFiles are the suite's optional format tests vendored, per
// draft: they hold with format asserted.
var suiteFormatFiles = []string{"date-time.json", "uuid.json"}

// Format is an annotation by default in every draft, so no answer is
// refused for it; Config.AssertFormat asserts it, with the suite's
// verdicts.
func TestJSONSchemaSuiteFormat(t *testing.T) {
	for _, assert := range []bool{false, true} {
		v := MustNew(Config{AssertFormat: assert})
		for _, draft := range suiteDrafts {
			for _, f := range suiteFormatFiles {
				file := filepath.Join(suiteDir, draft, "optional", "format", f)
				raw, err := os.ReadFile(file)
				if errors.Is(err, os.ErrNotExist) {
					continue // the draft has no such format (uuid before 2019-09)
				}
				if err != nil {
					t.Fatal(err)
				}
				var groups []suiteGroup
				if err := json.Unmarshal(raw, &groups); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				for _, g := range groups {
					req := &portico.Request{Schema: &portico.Schema{JSON: withDraft(g.Schema, draft)}}
					for _, c := range g.Tests {
						err := v.Check(req, &portico.Response{Text: string(c.Data), FinishReason: portico.FinishStop})
						if want := c.Valid || !assert; (err == nil) != want {
							t.Errorf("AssertFormat %v: %s/%s: %s: Check(%s) = %v, want valid %v", assert, draft, f, c.Description, c.Data, err, want)
						}
					}
				}
			}
		}
	}
}

// suiteMetaschemas are the drafts' $schema URIs.
var suiteMetaschemas = map[string]string{
	"draft4":       "http://json-schema.org/draft-04/schema#",
	"draft6":       "http://json-schema.org/draft-06/schema#",
	"draft7":       "http://json-schema.org/draft-07/schema#",
	"draft2019-09": "https://json-schema.org/draft/2019-09/schema",
	"draft2020-12": "https://json-schema.org/draft/2020-12/schema",
}

// withDraft returns the object schema raw naming draft in "$schema", as a
// request's schema says which draft it is written in; the suite's draft 4,
// 6 and 7 files leave it to the runner. A schema that names one already,
// and a boolean schema, are returned as they are.
func withDraft(raw json.RawMessage, draft string) json.RawMessage {
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil {
		return raw
	}
	if _, ok := probe["$schema"]; ok {
		return raw
	}
	head := `{"$schema": "` + suiteMetaschemas[draft] + `"`
	if len(probe) > 0 {
		head += ","
	}
	i := strings.IndexByte(string(raw), '{')
	return json.RawMessage(head + string(raw[i+1:]))
}
