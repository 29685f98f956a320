package jsonrpc

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		batch  bool
		topErr int // code of an error answering the whole body
		calls  []Call
	}{
		{name: "single", body: `{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[430]}`,
			calls: []Call{{Request: Request{ID: v(`1`), Method: "getBlock", Params: v(`[430]`)}}}},
		{name: "string id kept byte for byte", body: `{"jsonrpc":"2.0","id":"a\u0041","method":"m"}`,
			calls: []Call{{Request: Request{ID: v(`"a\u0041"`), Method: "m"}}}},
		{name: "number id kept byte for byte", body: `{"jsonrpc":"2.0","id":1.50e3,"method":"m"}`,
			calls: []Call{{Request: Request{ID: v(`1.50e3`), Method: "m"}}}},
		{name: "null id is not a notification", body: `{"jsonrpc":"2.0","id":null,"method":"m"}`,
			calls: []Call{{Request: Request{ID: v(`null`), Method: "m"}}}},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"m","params":{}}`,
			calls: []Call{{Request: Request{Method: "m", Params: v(`{}`)}}}},
		{name: "null params read as absent", body: `{"jsonrpc":"2.0","id":1,"method":"m","params":null}`,
			calls: []Call{{Request: Request{ID: v(`1`), Method: "m"}}}},
		{name: "empty body", body: ``, topErr: CodeParseError},
		{name: "not json", body: `{"jsonrpc":"2.0",`, topErr: CodeParseError},
		{name: "trailing garbage", body: `{"jsonrpc":"2.0","id":1,"method":"m"} x`, topErr: CodeParseError},
		{name: "empty batch", body: ` [] `, batch: true, topErr: CodeInvalidRequest},
		{name: "scalar body", body: `1`, calls: []Call{{Err: &Error{Code: CodeInvalidRequest}}}},
		{name: "wrong version", body: `{"jsonrpc":"1.0","id":7,"method":"m"}`,
			calls: []Call{{Request: Request{ID: v(`7`)}, Err: &Error{Code: CodeInvalidRequest}}}},
		{name: "missing version", body: `{"id":7,"method":"m"}`,
			calls: []Call{{Request: Request{ID: v(`7`)}, Err: &Error{Code: CodeInvalidRequest}}}},
		{name: "object id", body: `{"jsonrpc":"2.0","id":{},"method":"m"}`,
			calls: []Call{{Err: &Error{Code: CodeInvalidRequest}}}},
		{name: "method not a string", body: `{"jsonrpc":"2.0","id":2,"method":1}`,
			calls: []Call{{Request: Request{ID: v(`2`)}, Err: &Error{Code: CodeInvalidRequest}}}},
		{name: "empty method", body: `{"jsonrpc":"2.0","id":2,"method":""}`,
			calls: []Call{{Request: Request{ID: v(`2`)}, Err: &Error{Code: CodeInvalidRequest}}}},
		{name: "scalar params", body: `{"jsonrpc":"2.0","id":2,"method":"m","params":"x"}`,
			calls: []Call{{Request: Request{ID: v(`2`), Method: "m"}, Err: &Error{Code: CodeInvalidRequest}}}},
		{name: "duplicate member", body: `{"jsonrpc":"2.0","id":2,"id":3,"method":"m"}`,
			calls: []Call{{Err: &Error{Code: CodeInvalidRequest}}}},
		{name: "batch with a bad entry", body: `[{"jsonrpc":"2.0","id":1,"method":"a"},2,{"jsonrpc":"2.0","method":"b"}]`, batch: true,
			calls: []Call{
				{Request: Request{ID: v(`1`), Method: "a"}},
				{Err: &Error{Code: CodeInvalidRequest}},
				{Request: Request{Method: "b"}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls, batch, err := Decode([]byte(tt.body))
			if tt.topErr != 0 {
				if err == nil || err.Code != tt.topErr {
					t.Fatalf("want whole-body error %d, got %v", tt.topErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if batch != tt.batch {
				t.Errorf("batch = %v, want %v", batch, tt.batch)
			}
			if len(calls) != len(tt.calls) {
				t.Fatalf("got %d calls, want %d", len(calls), len(tt.calls))
			}
			for i, want := range tt.calls {
				got := calls[i]
				if !bytes.Equal(got.ID, want.ID) || (got.ID == nil) != (want.ID == nil) {
					t.Errorf("call %d: id %q, want %q", i, got.ID, want.ID)
				}
				if (got.Err == nil) != (want.Err == nil) {
					t.Fatalf("call %d: err %v, want %v", i, got.Err, want.Err)
				}
				if got.Err != nil {
					if got.Err.Code != want.Err.Code {
						t.Errorf("call %d: code %d, want %d", i, got.Err.Code, want.Err.Code)
					}
					continue
				}
				if got.Method != want.Method || !bytes.Equal(got.Params, want.Params) {
					t.Errorf("call %d: got %q %s, want %q %s", i, got.Method, got.Params, want.Method, want.Params)
				}
			}
		})
	}
}

func TestDecodeResponse(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":9,"result":{"a":[1,2,{"b":"c"}]}}`)
	r, err := DecodeResponse(body)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Result) != `{"a":[1,2,{"b":"c"}]}` || string(r.ID) != "9" || r.Error != nil {
		t.Fatalf("got %+v", r)
	}
	r, err = DecodeResponse([]byte(`{"jsonrpc":"2.0","id":9,"error":{"code":-32000,"message":"header not found","data":{"x":1}}}`))
	if err != nil || r.Error == nil || r.Error.Code != -32000 || r.Error.Message != "header not found" || string(r.Error.Data) != `{"x":1}` {
		t.Fatalf("got %+v, %v", r, err)
	}
	// A node's error passes on as the node wrote it: escapes, member order
	// and members besides code, message and data.
	nodeErr := `{ "message" : "block numbers must be in order: 155 \u003c= 155", "code":-38020, "data":{"x" : 1}, "event":-33000 }`
	r, err = DecodeResponse([]byte(`{"jsonrpc":"2.0","id":9,"error":` + nodeErr + `}`))
	if err != nil || r.Error.Code != -38020 || r.Error.Message != "block numbers must be in order: 155 <= 155" {
		t.Fatalf("got %+v, %v", r, err)
	}
	if got := string(AppendError(nil, v(`"a"`), r.Error)); got != `{"jsonrpc":"2.0","id":"a","error":`+nodeErr+`}` {
		t.Fatalf("AppendError wrote a node's error anew: %s", got)
	}
	for _, bad := range []string{``, `[]`, `{"id":1,"result":1}`, `{"jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}`, `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}`, `{"jsonrpc":"2.0","id":1,"result":[1,}`, `{"jsonrpc":"2.0","id":1,"result":1} {}`} {
		if _, err := DecodeResponse([]byte(bad)); err == nil {
			t.Errorf("DecodeResponse(%q) accepted a malformed response", bad)
		}
	}
}

func TestAppend(t *testing.T) {
	got := string(AppendError(nil, nil, &Error{Code: -32602, Message: `bad "x"`, Data: v(`{"field":"slot"}`)}))
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad \"x\"","data":{"field":"slot"}}}`
	if got != want {
		t.Errorf("AppendError = %s, want %s", got, want)
	}
	if got := string(AppendResult(nil, v(`"x"`), v(`null`))); got != `{"jsonrpc":"2.0","id":"x","result":null}` {
		t.Errorf("AppendResult = %s", got)
	}
	if got := string(AppendRequest(nil, v(`1`), "eth_chainId", nil)); got != `{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}` {
		t.Errorf("AppendRequest = %s", got)
	}
}

// FuzzDecode checks that any body decodes without panicking, and that every
// error or call it yields can be encoded back into valid JSON.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[430,{"encoding":"json"}]}`, `[{"jsonrpc":"2.0","method":"x"},1]`, `[]`, `{`, `"\u0000"`, `{"jsonrpc":"2.0","id":[],"method":"m"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if raw := trimSpace(body); len(raw) > 0 && raw[0] == '{' && jsontextValid(body) {
			checkSplitRequest(t, raw)
		}
		calls, _, err := Decode(body)
		if err != nil {
			if out := AppendError(nil, nil, err); !jsontext.Value(out).IsValid() {
				t.Fatalf("invalid error encoding %s", out)
			}
			return
		}
		for _, c := range calls {
			var out []byte
			if c.Err != nil {
				out = AppendError(nil, c.ID, c.Err)
			} else {
				out = AppendRequest(nil, c.ID, c.Method, c.Params)
			}
			if !jsontext.Value(out).IsValid() {
				t.Fatalf("invalid encoding %s", out)
			}
		}
	})
}

// TestSplitRequest checks which calls take the fast path of decodeCall,
// and that it reads them as json.Unmarshal does.
func TestSplitRequest(t *testing.T) {
	cases := []struct {
		name, body string
		fast       bool
	}{
		{"compact", `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab","latest"]}`, true},
		{"reordered", `{"params":[],"method":"m","id":"x","jsonrpc":"2.0"}`, true},
		{"spaces and newlines", "{ \"jsonrpc\" : \"2.0\" ,\n\t\"id\" : 7 , \"method\":\"m\" }", true},
		{"brackets and quotes in strings", `{"jsonrpc":"2.0","id":"}]","method":"m","params":[{"a":"\\\"}"},[[]],-1.5e3,true,null]}`, true},
		{"number last", `{"jsonrpc":"2.0","method":"m","id":-12.5E+3}`, true},
		{"literal last", `{"jsonrpc":"2.0","method":"m","id":null}`, true},
		{"escapes in values", `{"jsonrpc":"2.0","id":"\u0041","method":"get\u0042lock"}`, true},
		{"empty object", `{}`, true},
		{"only params", `{"params":{"a":{"b":[1,2,{"c":"]"}]}}}`, true},
		{"unknown member", `{"jsonrpc":"2.0","id":1,"method":"m","extra":1}`, false},
		{"another case", `{"jsonrpc":"2.0","id":1,"Method":"m"}`, false},
		{"repeated name", `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`, false},
		{"escaped name", `{"jsonrpc":"2.0","\u0069d":1,"method":"m"}`, false},
		{"escaped quote in a name", `{"jsonrpc":"2.0","i\"d":1,"method":"m"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !jsontextValid([]byte(tc.body)) {
				t.Fatalf("not valid JSON: %s", tc.body)
			}
			if _, ok := splitRequest([]byte(tc.body)); ok != tc.fast {
				t.Fatalf("fast path taken = %v, want %v", ok, tc.fast)
			}
			checkSplitRequest(t, []byte(tc.body))
		})
	}
}

// TestSplitRequestCopies: what the fast path returns does not alias the
// body, which its reader reuses.
func TestSplitRequestCopies(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":"a","method":"m","params":["x"]}`)
	w, ok := splitRequest(body)
	if !ok {
		t.Fatal("not taken by the fast path")
	}
	clear(body)
	if string(w.JSONRPC) != `"2.0"` || string(w.ID) != `"a"` || string(w.Method) != `"m"` || string(w.Params) != `["x"]` {
		t.Fatalf("values changed with the body: %q %q %q %q", w.JSONRPC, w.ID, w.Method, w.Params)
	}
}

// checkSplitRequest fails t when the fast path takes raw (a valid JSON
// object) and reads it differently from json.Unmarshal.
func checkSplitRequest(t *testing.T, raw []byte) {
	t.Helper()
	fast, ok := splitRequest(raw)
	if !ok {
		return
	}
	var slow wireRequest
	if err := json.Unmarshal(raw, &slow); err != nil {
		t.Fatalf("the fast path takes %s, json.Unmarshal refuses it: %v", raw, err)
	}
	for _, m := range []struct {
		name       string
		fast, slow jsontext.Value
	}{{"jsonrpc", fast.JSONRPC, slow.JSONRPC}, {"id", fast.ID, slow.ID}, {"method", fast.Method, slow.Method}, {"params", fast.Params, slow.Params}} {
		if (m.fast == nil) != (m.slow == nil) || !bytes.Equal(m.fast, m.slow) {
			t.Fatalf("%s of %s: fast path %q (nil %v), json.Unmarshal %q (nil %v)", m.name, raw, []byte(m.fast), m.fast == nil, []byte(m.slow), m.slow == nil)
		}
	}
	if c := decodeCall(raw); c.Err == nil && bytes.IndexByte(fast.Method, '\\') < 0 {
		var method string
		if err := json.Unmarshal(slow.Method, &method); err != nil || method != c.Method {
			t.Fatalf("method of %s: %q, json.Unmarshal %q (%v)", raw, c.Method, method, err)
		}
	}
}

// TestDecodeResponseFastPath checks that the fast path and the full
// decoder agree: same result and id when both accept, and that whatever
// the fast path refuses is left to the full decoder.
func TestDecodeResponseFastPath(t *testing.T) {
	cases := []struct {
		name, body string
		fast       bool // taken by the fast path
		ok         bool // accepted at all
	}{
		{"id first", `{"jsonrpc":"2.0","id":1,"result":{"a":[1,"]}"]}}`, true, true},
		{"result first", `{"jsonrpc":"2.0","result":[1,{"id":2}],"id":1}`, true, true},
		{"result first, id in result", `{"jsonrpc":"2.0","result":{"x":1,"id":7},"id":"q"}`, true, true},
		{"trailing newline", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\n", true, true},
		{"string id", `{"jsonrpc":"2.0","id":"a-1","result":"0x1"}`, true, true},
		{"spaces", `{"jsonrpc": "2.0", "id": 1, "result": 1}`, false, true},
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"m"}}`, false, true},
		{"result then error", `{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":"x"},"id":1}`, false, false},
		{"id first, then error", `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}`, false, false},
		{"forged batch member", `{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":2,"result":2}`, false, false},
		{"unclosed", `{"jsonrpc":"2.0","id":1,"result":[1,}`, false, false},
		{"bad utf-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}", false, false},
		{"control char", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\x01\"}", false, false},
		{"empty result", `{"jsonrpc":"2.0","id":1,"result":}`, false, false},
		{"escaped id", `{"jsonrpc":"2.0","id":"a\"b","result":1}`, false, true},
		{"space before result", `{"jsonrpc":"2.0","id":1,"result": 5}`, true, true},
		{"space around result, result first", "{\"jsonrpc\":\"2.0\",\"result\":\t[0,\"0\"] \r\n,\"id\":0}", true, true},
		{"only space for a result", `{"jsonrpc":"2.0","id":1,"result": }`, false, false},
		{"surrogate pair", `{"jsonrpc":"2.0","id":1,"result":"\ud83d\ude00"}`, true, true},
		{"lone high surrogate", `{"jsonrpc":"2.0","id":1,"result":"\ud800"}`, false, false},
		{"lone low surrogate", `{"jsonrpc":"2.0","result":["\udc00"],"id":1}`, false, false},
		{"surrogate in UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xed\xa0\x80\"}", false, false},
		{"overlong UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xc0\xaf\"}", false, false},
		{"duplicate names in result", `{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}`, true, true},
		{"leading zero in result", `{"jsonrpc":"2.0","id":1,"result":01}`, false, false},
		{"minus as id", `{"jsonrpc":"2.0","id":-,"result":1}`, false, false},
		{"leading zero id", `{"jsonrpc":"2.0","result":1,"id":01}`, false, false},
		{"negative id", `{"jsonrpc":"2.0","id":-7,"result":1}`, true, true},
		{"non-ASCII string id", `{"jsonrpc":"2.0","id":"é","result":1}`, false, true},
		{"bad UTF-8 in string id", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"result\":1}", false, false},
		{"deepest result", `{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`, true, true},
		{"too deep", `{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, fast := splitResult([]byte(tc.body))
			if fast != tc.fast {
				t.Errorf("fast path taken = %v, want %v", fast, tc.fast)
			}
			r, err := DecodeResponse([]byte(tc.body))
			if (err == nil) != tc.ok {
				t.Fatalf("DecodeResponse error = %v, want ok %v", err, tc.ok)
			}
			full, ferr := decodeResponse([]byte(tc.body))
			if (ferr == nil) != (err == nil) || string(full.Result) != string(r.Result) || string(full.ID) != string(r.ID) {
				t.Fatalf("fast path %q %q %v, full decoder %q %q %v", r.Result, r.ID, err, full.Result, full.ID, ferr)
			}
		})
	}
}

// FuzzDecodeResponse checks that any body decodes without panicking, and
// that the fast path never accepts what the full decoder refuses or gives
// a different result.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"a":1}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","result":[1,"x"],"id":1}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","result":{"a":"\ud83d\ude00","b":[1e5,-0,true,null]}}`))
	// The two bugs fuzzing found in the fast path when it used fastjson
	// (testdata/fuzz holds the input that found the first).
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result": 5}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":"\ud800"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeResponse(body)
		// Names may repeat in a result: the full decoder allows it too.
		if err == nil && r.Result != nil && !r.Result.IsValid(jsontext.AllowDuplicateNames(true)) {
			t.Fatalf("accepted invalid result %q", r.Result)
		}
		// A node's error is passed on as its bytes: they must make a valid
		// answer.
		if err == nil && r.Error != nil {
			if out := AppendError(nil, r.ID, r.Error); !jsontext.Value(out).IsValid(jsontext.AllowDuplicateNames(true)) {
				t.Fatalf("a node's error %q makes the invalid answer %q", body, out)
			}
		}
		if fr, ok := splitResult(body); ok {
			full, err := decodeResponse(body)
			if err != nil || string(full.Result) != string(fr.Result) || string(full.ID) != string(fr.ID) {
				t.Fatalf("fast path accepted %q as %q (id %q); full decoder: %q (id %q), %v", body, fr.Result, fr.ID, full.Result, full.ID, err)
			}
		}
	})
}

func v(s string) jsontext.Value { return jsontext.Value(s) }
