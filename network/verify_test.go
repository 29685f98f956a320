package network

import "testing"

// TestParseVerifyMode: the config's three spellings, exactly, and off by
// default.
func TestParseVerifyMode(t *testing.T) {
	cases := []struct {
		in      string
		want    VerifyMode
		wantErr bool
	}{
		{"", VerifyOff, false},
		{"off", VerifyOff, false},
		{"on", VerifyOn, false},
		{"strict", VerifyStrict, false},
		{"true", VerifyOff, true},
		{"On", VerifyOff, true},
		{"STRICT", VerifyOff, true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseVerifyMode(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseVerifyMode(%q) = %v, %v", tc.in, got, err)
			}
			if err == nil && tc.in != "" && got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}
