// Command take prints IDs handed out by the idmint Go client, one per line, in the order the
// library handed them out:
//
//	take --nodes HOST:PORT[,HOST:PORT...] [--token T] --kind segment|snowflake [--tag TAG] --count N
//
// The nodes are Redis-protocol addresses (the library's redis://HOST:PORT; a full redis:// or
// rediss:// URL is taken as it is). It exits 0 after printing N IDs, or non-zero with one line
// on stderr saying why: 2 for a bad command line, 1 when the IDs could not be had.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	idmint "idmint.dev/client"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the program, for a test to call.
func run(args []string, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...interface{}) int {
		fmt.Fprintf(stderr, "take: "+format+"\n", a...)
		return code
	}
	values := map[string]string{}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "--") {
			return fail(2, "bad command line: unexpected argument %q", arg)
		}
		name, value, inline := strings.Cut(arg[2:], "=")
		switch name {
		case "nodes", "token", "kind", "tag", "count":
		default:
			return fail(2, "bad flag --%s: not a flag of take (--nodes, --token, --kind, --tag, --count)", name)
		}
		if !inline {
			if i+1 >= len(args) {
				return fail(2, "bad flag --%s: needs a value", name)
			}
			i++
			value = args[i]
		}
		values[name] = value
	}
	nodes, token, kind, tag := values["nodes"], values["token"], values["kind"], values["tag"]
	count, err := strconv.ParseInt(values["count"], 10, 64)
	switch {
	case nodes == "":
		return fail(2, "bad flag --nodes: give HOST:PORT[,HOST:PORT...]")
	case kind != "segment" && kind != "snowflake":
		return fail(2, "bad flag --kind: %q, want segment or snowflake", kind)
	case kind == "segment" && tag == "":
		return fail(2, "bad flag --tag: needed for --kind segment")
	case err != nil || count < 0:
		return fail(2, "bad flag --count: %q, want the number of IDs (0 or more)", values["count"])
	}
	var urls []string
	for _, node := range strings.Split(nodes, ",") {
		node = strings.TrimSpace(node)
		if node == "" {
			return fail(2, "bad flag --nodes: an empty address in %q", nodes)
		}
		if !strings.Contains(node, "://") {
			node = "redis://" + node
		}
		urls = append(urls, node)
	}
	client, err := idmint.New(idmint.Config{Nodes: urls, Token: token})
	if err != nil {
		var config *idmint.ConfigError
		if errors.As(err, &config) && config.Field == "Nodes" {
			return fail(2, "bad flag --nodes: %s", config.Reason)
		}
		if errors.As(err, &config) && config.Field == "Token" {
			return fail(2, "bad flag --token: %s", config.Reason)
		}
		return fail(2, "%v", err)
	}
	ctx := context.Background()
	defer client.Close(ctx)
	out := bufio.NewWriterSize(stdout, 64<<10)
	line := make([]byte, 0, 24)
	write := func(id int64) {
		line = append(idmint.Form{}.AppendEncode(line[:0], id), '\n')
		_, _ = out.Write(line)
	}
	for left := count; left > 0; {
		if kind == "segment" {
			id, err := client.Next(ctx, tag)
			if err != nil {
				_ = out.Flush()
				return fail(1, "%s", describe(err))
			}
			write(id)
			left--
			continue
		}
		n := left
		if n > 1000 {
			n = 1000
		}
		ids, err := client.Snowflakes(ctx, int(n))
		if err != nil {
			_ = out.Flush()
			return fail(1, "%s", describe(err))
		}
		for _, id := range ids {
			write(id)
		}
		left -= n
	}
	if err := out.Flush(); err != nil {
		return fail(1, "writing the IDs: %v", err)
	}
	return 0
}

// describe names the kind of failure first: unavailable, refused (and why), closed.
func describe(err error) string {
	switch {
	case errors.Is(err, idmint.ErrUnavailable):
		return "unavailable: " + err.Error()
	case errors.Is(err, idmint.ErrAuth):
		return "refused (auth): " + err.Error()
	case errors.Is(err, idmint.ErrClosed):
		return "closed: " + err.Error()
	}
	return "refused: " + err.Error()
}
