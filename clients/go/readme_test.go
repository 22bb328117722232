package idmint

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's install command and quick start, run as written against a real node, and its
// Form example compiled.
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 2 {
		t.Fatalf("the README has %d Go blocks, want the quick start and the Form example", len(blocks))
	}
	formBlock := ""
	for _, b := range blocks {
		if strings.Contains(b[1], "idmint.NewForm(") && !strings.Contains(b[1], "package main") {
			formBlock = b[1]
		}
	}
	if formBlock == "" {
		t.Fatal("the README has no Form example")
	}
	install := regexp.MustCompile(`(?m)^go mod edit .*$`).FindString(string(readme))
	if install == "" {
		t.Fatal("no `go mod edit` install line in the README")
	}
	module, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module quickstart\n\ngo 1.19\n")
	write("main.go", blocks[0][1])
	write("form.go", "package main\n\nimport idmint \"idmint.dev/client\"\n\nfunc formExample(id int64) {\n"+
		formBlock+"\t_, _ = back, err\n}\n\nvar _ = formExample\n")
	run := func(env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(nil, "sh", "-c", strings.ReplaceAll(install, "/path/to/idmint/clients/go", module))
	n := startNode(t, sqliteStore(t))
	out := run([]string{"IDMINT_NODES=" + n.url(), "IDMINT_TOKEN=" + testToken}, "go", "run", ".")
	if out != "1 00000000001 true 100\n" {
		t.Errorf("the quick start printed %q", out)
	}
	if !strings.Contains(string(readme), "It prints `1 00000000001 true 100`") {
		t.Error("the README does not say what the quick start prints")
	}
}

// The "UUIDv7 and ULID" example, run as written (it needs no node).
func TestReadmeID128Example(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	at := strings.Index(text, "## UUIDv7 and ULID")
	if at < 0 {
		t.Fatal("the README has no section \"UUIDv7 and ULID\"")
	}
	block := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(text[at:])
	if block == nil {
		t.Fatal("the section has no Go block")
	}
	module, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":  "module id128example\n\ngo 1.19\n\nrequire idmint.dev/client v0.0.0\n\nreplace idmint.dev/client => " + module + "\n",
		"main.go": block[1],
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) != 5 || fields[1] != "true" || fields[3] != "true" || fields[4] != "42" {
		t.Fatalf("the example printed %q", out)
	}
	if id, err := ParseUUID7(fields[0]); err != nil || id.String() != fields[0] {
		t.Errorf("%s: %v", fields[0], err)
	}
	if id, err := ParseID128(fields[2]); err != nil || id.ULIDString() != fields[2] {
		t.Errorf("%s: %v", fields[2], err)
	}
}
