package main

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
)

// Every refusal is one line on stderr naming the flag, with nothing on stdout. (Printing IDs
// against nodes, one killed mid-run, is clients/conformance/take_check.py's.)
func TestRefusalsAreOneLine(t *testing.T) {
	dead := deadAddress(t)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--kind", "segment", "--tag", "t", "--count", "1"}, 2, "--nodes"},
		{[]string{"--nodes", dead, "--kind", "ulid", "--count", "1"}, 2, "--kind"},
		{[]string{"--nodes", dead, "--kind", "segment", "--count", "1"}, 2, "--tag"},
		{[]string{"--nodes", dead, "--kind", "segment", "--tag", "t", "--count", "x"}, 2, "--count"},
		{[]string{"--nodes", dead, "--kind", "segment", "--tag", "t", "--count", "-1"}, 2, "--count"},
		{[]string{"--nodes", dead, "--kind", "snowflake", "--count"}, 2, "--count"},
		{[]string{"--nodes", dead, "--kind", "snowflake", "--count", "1", "--verbose", "1"}, 2, "--verbose"},
		{[]string{"--nodes", dead, "--kind", "snowflake", "--count", "1", "extra"}, 2, "extra"},
		{[]string{"--nodes", "http://x:1", "--kind", "snowflake", "--count", "1"}, 2, "--nodes"},
		{[]string{"--nodes", dead + ",", "--kind", "snowflake", "--count", "1"}, 2, "--nodes"},
		{[]string{"--nodes", dead, "--token", " ", "--kind", "snowflake", "--count", "1"}, 2, "--token"},
		{[]string{"--nodes", dead, "--kind", "segment", "--tag", "t", "--count", "1"}, 1, "unavailable"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
		if code != tc.code || stdout.Len() != 0 || len(lines) != 1 || !strings.Contains(lines[0], tc.says) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one line with %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.says)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--nodes", dead, "--kind", "snowflake", "--count", "0"}, &stdout, &stderr); code != 0 || stdout.Len() != 0 {
		t.Errorf("--count 0: exit %d, %q %q", code, stdout.String(), stderr.String())
	}
}

// deadAddress is a loopback address where nothing listens.
func deadAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
