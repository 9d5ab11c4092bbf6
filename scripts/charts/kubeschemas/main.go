// Command kubeschemas writes strict, standalone JSON schemas of the built-in Kubernetes kinds
// for kubeconform's local -schema-location, without network access beyond the Go module proxy.
//
// The source is the typed schema client-go ships for server-side apply (the structured-merge-diff
// schema in k8s.io/client-go/applyconfigurations/internal): every built-in type with its fields
// and scalar types, for the Kubernetes version of that client-go release. It carries no
// "required" lists, so the schemas check unknown or misplaced fields and wrong types, not
// missing fields. Objects reject properties they do not declare (kubeconform -strict).
//
// usage: kubeschemas <client-go module dir> <out dir>
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

type typeRef struct {
	NamedType *string  `json:"namedType,omitempty"`
	Scalar    *string  `json:"scalar,omitempty"`
	List      *listDef `json:"list,omitempty"`
	Map       *mapDef  `json:"map,omitempty"`
	Untyped   any      `json:"untyped,omitempty"`
}

type listDef struct {
	ElementType typeRef `json:"elementType"`
}

type field struct {
	Name string  `json:"name"`
	Type typeRef `json:"type"`
}

type mapDef struct {
	Fields      []field  `json:"fields,omitempty"`
	ElementType *typeRef `json:"elementType,omitempty"`
}

type namedType struct {
	Name string `json:"name"`
	typeRef
}

type schemaDoc struct {
	Types []namedType `json:"types"`
}

type converter struct {
	types map[string]typeRef
	memo  map[string]map[string]any
}

func (c *converter) named(name string, stack map[string]bool) map[string]any {
	if s, ok := c.memo[name]; ok {
		return s
	}
	if stack[name] {
		return map[string]any{}
	}
	t, ok := c.types[name]
	if !ok {
		return map[string]any{}
	}
	stack[name] = true
	s := c.ref(t, stack)
	delete(stack, name)
	c.memo[name] = s
	return s
}

func (c *converter) ref(t typeRef, stack map[string]bool) map[string]any {
	switch {
	case t.NamedType != nil:
		return c.named(*t.NamedType, stack)
	case t.Scalar != nil:
		switch *t.Scalar {
		case "string":
			return map[string]any{"type": "string"}
		case "numeric":
			return map[string]any{"type": "number"}
		case "boolean":
			return map[string]any{"type": "boolean"}
		default: // untyped: IntOrString, Quantity and the like
			return map[string]any{}
		}
	case t.List != nil:
		return map[string]any{"type": "array", "items": c.ref(t.List.ElementType, stack)}
	case t.Map != nil:
		s := map[string]any{"type": "object"}
		if len(t.Map.Fields) > 0 {
			props := map[string]any{}
			for _, f := range t.Map.Fields {
				props[f.Name] = c.ref(f.Type, stack)
			}
			s["properties"] = props
			s["additionalProperties"] = false
		}
		if t.Map.ElementType != nil {
			s["additionalProperties"] = c.ref(*t.Map.ElementType, stack)
		}
		return s
	default:
		return map[string]any{}
	}
}

// kubeconform names a schema {{ .ResourceKind }}{{ .KindSuffix }}: the kind in lower case, the
// first segment of the API group (none for the core group) and the version.
var builtin = regexp.MustCompile(`^io\.k8s\.api\.([a-z0-9]+)\.(v[a-z0-9]+)\.([A-Za-z0-9]+)$`)

var groupSegment = map[string]string{"core": "", "apiserverinternal": "internal"}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: kubeschemas <client-go module dir> <out dir>")
		os.Exit(2)
	}
	src, err := os.ReadFile(filepath.Join(os.Args[1], "applyconfigurations", "internal", "internal.go"))
	check(err)
	text := string(src)
	start := strings.Index(text, "typed.YAMLObject(`")
	check(boolErr(start >= 0, "schema literal not found"))
	text = text[start+len("typed.YAMLObject(`"):]
	end := strings.Index(text, "`)")
	check(boolErr(end >= 0, "end of schema literal not found"))

	var doc schemaDoc
	check(yaml.Unmarshal([]byte(text[:end]), &doc))
	c := &converter{types: map[string]typeRef{}, memo: map[string]map[string]any{}}
	for _, t := range doc.Types {
		c.types[t.Name] = t.typeRef
	}

	out := os.Args[2]
	check(os.MkdirAll(out, 0o755))
	written := 0
	for _, t := range doc.Types {
		m := builtin.FindStringSubmatch(t.Name)
		if m == nil || t.Map == nil || strings.HasSuffix(m[3], "List") || !hasFields(t.Map, "apiVersion", "kind", "metadata") {
			continue
		}
		group, ok := groupSegment[m[1]]
		if !ok {
			group = m[1]
		}
		suffix := "-" + m[2]
		if group != "" {
			suffix = "-" + group + suffix
		}
		base := c.named(t.Name, map[string]bool{})
		s := map[string]any{"$schema": "http://json-schema.org/draft-07/schema#"}
		props := map[string]any{}
		for k, v := range base["properties"].(map[string]any) {
			props[k] = v
		}
		props["kind"] = map[string]any{"type": "string", "enum": []string{m[3]}}
		s["type"] = "object"
		s["properties"] = props
		s["additionalProperties"] = false
		s["required"] = []string{"apiVersion", "kind"}
		b, err := json.Marshal(s)
		check(err)
		check(os.WriteFile(filepath.Join(out, strings.ToLower(m[3])+suffix+".json"), b, 0o644))
		written++
	}
	fmt.Printf("wrote %d schemas to %s\n", written, out)
}

func hasFields(m *mapDef, names ...string) bool {
	have := map[string]bool{}
	for _, f := range m.Fields {
		have[f.Name] = true
	}
	for _, n := range names {
		if !have[n] {
			return false
		}
	}
	return true
}

func boolErr(ok bool, msg string) error {
	if ok {
		return nil
	}
	return fmt.Errorf("%s", msg)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeschemas:", err)
		os.Exit(1)
	}
}
