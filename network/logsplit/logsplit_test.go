package logsplit

import (
	"fmt"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestChunks(t *testing.T) {
	tests := []struct {
		name           string
		from, to, size uint64
		want           []Range
	}{
		{"one block", 5, 5, 10, []Range{{5, 5}}},
		{"within one", 0, 9, 10, []Range{{0, 9}}},
		{"aligned", 0, 29, 10, []Range{{0, 9}, {10, 19}, {20, 29}}},
		{"unaligned ends", 7, 23, 10, []Range{{7, 9}, {10, 19}, {20, 23}}},
		{"ends on a boundary", 10, 20, 10, []Range{{10, 19}, {20, 20}}},
		{"no size", 3, 1000, 0, []Range{{3, 1000}}},
		{"size one", 3, 5, 1, []Range{{3, 3}, {4, 4}, {5, 5}}},
		{"top of the range", ^uint64(0) - 2, ^uint64(0), 2, []Range{{^uint64(0) - 2, ^uint64(0) - 2}, {^uint64(0) - 1, ^uint64(0)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Chunks(tc.from, tc.to, tc.size)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Chunks(%d, %d, %d) = %v, want %v", tc.from, tc.to, tc.size, got, tc.want)
			}
			var blocks uint64
			for _, r := range got {
				blocks += r.Blocks()
			}
			if blocks != tc.to-tc.from+1 {
				t.Errorf("the chunks cover %d blocks, want %d", blocks, tc.to-tc.from+1)
			}
		})
	}
}

func TestLogEntries(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{`[]`, nil, false},
		{` [ ] `, nil, false},
		{`[{"a":1}]`, []string{`{"a":1}`}, false},
		{"[ {\"a\":1} ,\n {\"b\":[1,2]}]", []string{`{"a":1}`, `{"b":[1,2]}`}, false},
		{`null`, nil, true},
		{`{"a":1}`, nil, true},
		{`[1,`, nil, true},
	}
	for _, tc := range tests {
		got, err := Entries(jsontext.Value(tc.in))
		if (err != nil) != tc.err {
			t.Errorf("Entries(%q) error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		var s []string
		for _, v := range got {
			s = append(s, string(v))
		}
		if fmt.Sprint(s) != fmt.Sprint(tc.want) {
			t.Errorf("Entries(%q) = %q, want %q", tc.in, s, tc.want)
		}
	}
}
