package auth

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestParseCallbackURL(t *testing.T) {
	id := strings.Repeat("0a", 32)
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	cases := []struct {
		name, url string
		session   string
		loginErr  string
		field     string
	}{
		{"v7 form", "com.example.app://auth#sessionId=" + id + "&sessionNamespace=", id, "", ""},
		{"loopback", "http://127.0.0.1:5555/callback/ab#sessionId=" + id, id, "", ""},
		{"short id padded", "x://auth#sessionId=abc", strings.Repeat("0", 61) + "abc", "", ""},
		{"v8 form", "x://auth#b64Params=" + b64(`{"sessionId":"`+id+`"}`), id, "", ""},
		{"v8 padded std base64", "x://auth#b64Params=" + base64.StdEncoding.EncodeToString([]byte(`{"sessionId":"`+id+`"}`)), id, "", ""},
		{"fragment error", "x://auth#error=access_denied", "", "access_denied", ""},
		{"query error", "x://auth?error=bad%20thing", "", "bad thing", ""},
		{"b64 error", "x://auth#b64Params=" + b64(`{"error":"nope"}`), "", "nope", ""},
		{"no fragment", "x://auth", "", "", "sessionId"},
		{"not hex", "x://auth#sessionId=xyz", "", "", "sessionId"},
		{"zero key", "x://auth#sessionId=" + strings.Repeat("0", 64), "", "", "sessionId"},
		{"bad base64", "x://auth#b64Params=***", "", "", "b64Params"},
		{"b64 not json", "x://auth#b64Params=" + b64("hello"), "", "", "b64Params"},
		{"not a url", "::", "", "", "callbackUrl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cb, err := ParseCallbackURL(c.url)
			var le *LoginError
			var fe *FieldError
			switch {
			case c.loginErr != "":
				if !errors.As(err, &le) || le.Message != c.loginErr {
					t.Fatalf("err = %v, want login error %q", err, c.loginErr)
				}
			case c.field != "":
				if !errors.As(err, &fe) || fe.Field != c.field {
					t.Fatalf("err = %v, want field %s", err, c.field)
				}
			default:
				if err != nil || cb.SessionID != c.session {
					t.Fatalf("%+v %v", cb, err)
				}
			}
		})
	}
}

func FuzzParseCallbackURL(f *testing.F) {
	f.Add("x://auth#sessionId=" + strings.Repeat("0a", 32))
	f.Add("x://auth#b64Params=eyJzZXNzaW9uSWQiOiIwYSJ9")
	f.Add("http://127.0.0.1:1/cb?error=x#error=y")
	f.Fuzz(func(t *testing.T, s string) {
		cb, err := ParseCallbackURL(s)
		if err == nil && len(cb.SessionID) != 64 {
			t.Fatalf("accepted session id %q", cb.SessionID)
		}
	})
}
