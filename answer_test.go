package portico

import (
	"errors"
	"testing"
)

func TestAnswer(t *testing.T) {
	resp, cause := &Response{Text: "hi"}, errors.New("boom")
	for _, tt := range []struct {
		name     string
		resp     *Response
		err      error
		wantResp *Response
		wantErr  error
	}{
		{"neither", nil, nil, nil, ErrNilResponse},
		{"response", resp, nil, resp, nil},
		{"error", nil, cause, nil, cause},
		{"both", resp, cause, resp, cause},
	} {
		gotResp, gotErr := Answer(tt.resp, tt.err)
		if gotResp != tt.wantResp || gotErr != tt.wantErr {
			t.Errorf("%s: Answer(%v, %v) = %v, %v, want %v, %v", tt.name, tt.resp, tt.err, gotResp, gotErr, tt.wantResp, tt.wantErr)
		}
	}
	if _, err := Answer(nil, nil); ClassOf(err) != InvalidResponse {
		t.Errorf("ClassOf(Answer(nil, nil)) = %v, want %v", ClassOf(err), InvalidResponse)
	}
}
