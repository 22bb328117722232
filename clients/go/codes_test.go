package idmint

import (
	"os"
	"regexp"
	"testing"
)

// ErrorCodes is the server's list, in its order (crates/idmint-core/src/error_code.rs).
func TestErrorCodesAreTheServersList(t *testing.T) {
	source, err := os.ReadFile("../../crates/idmint-core/src/error_code.rs")
	if err != nil {
		t.Fatal(err)
	}
	var server []string
	for _, m := range regexp.MustCompile(`(?m)^\s+[A-Z][A-Za-z]+ => "([a-z_]+)",$`).FindAllStringSubmatch(string(source), -1) {
		server = append(server, m[1])
	}
	if len(server) < 40 {
		t.Fatalf("read only %d codes from error_code.rs", len(server))
	}
	if len(server) != len(ErrorCodes) {
		t.Fatalf("server %d codes, client %d:\n%v\n%v", len(server), len(ErrorCodes), server, ErrorCodes)
	}
	for i := range server {
		if server[i] != ErrorCodes[i] {
			t.Errorf("code %d: server %q, client %q", i, server[i], ErrorCodes[i])
		}
	}
	for code := range refusedCodes {
		if !isErrorCode(code) {
			t.Errorf("refused code %q is not an error code", code)
		}
	}
}
