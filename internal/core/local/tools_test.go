package local

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/projection"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// toolsHome installs n exposed, eligible commands test.tools/c00 … and
// returns the data directory and its owner.
func toolsHome(t *testing.T, n int) (string, *admin.Admin) {
	t.Helper()
	dir := testhome.TempDir(t)
	var cmds []string
	for i := range n {
		cmds = append(cmds, fmt.Sprintf(`{"id":"c%02d","path":["t","c%02d"],"summary":"Command %d",
			"execute":{"mapping":"managed","program":"bin/ok","result":{"kind":"text"}},
			"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}`, i, i, i))
	}
	rel := filepath.Join(dir, "src")
	testhome.WriteFiles(t, rel, map[string]string{
		"bin/ok":              "#!/bin/sh\n",
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.tools","version":"1.0.0","publisher":"test","commands":[` + strings.Join(cmds, ",") + `]}`,
	})
	data := filepath.Join(dir, "data")
	return data, testhome.InstallPinned(t, data, rel)
}

// applyAgent makes the agent task see the commands matching pattern.
func applyAgent(t *testing.T, a *admin.Admin, pattern string) {
	t.Helper()
	testhome.Apply(t, a, `{"endpointNamespace":"team","cli":{"task":"owner"},"mcp":{"expose":["test.tools/*"],"task":"agent"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":5000,"maxConcurrent":4,"enforcement":"host"},
		         "agent":{"commands":["`+pattern+`"],"deadlineMs":5000,"maxConcurrent":4,"enforcement":"host"}}}`)
}

// listAll lists every page for task, checking each page's bounds (I8).
func listAll(t *testing.T, l *Host, task string) (names []string, first *wire.ToolPage) {
	t.Helper()
	cursor := ""
	for {
		page, err := l.ListTools(context.Background(), &wire.ListTools{Task: task, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListTools(cursor %q): %v", cursor, err)
		}
		if first == nil {
			first = page
		}
		if len(page.Tools) > PageTools {
			t.Fatalf("a page of %d tools; at most %d", len(page.Tools), PageTools)
		}
		for _, tool := range page.Tools {
			names = append(names, tool.Name)
		}
		if cursor = page.NextCursor; cursor == "" {
			return names, first
		}
	}
}

// TestVisibleToolsFollowTheRevision: a task's visible tools are cached per
// projection, so a new revision must show its own tools at once — fewer
// as well as more (I5) — an older revision's cursor is refused (I8), and
// the cache keeps no more revisions than the projection cache does.
func TestVisibleToolsFollowTheRevision(t *testing.T) {
	data, a := toolsHome(t, 40)
	applyAgent(t, a, "test.tools/*")
	l := New(data)

	all, first := listAll(t, l, "agent")
	if len(all) != 40 || first.Total != 40 || len(first.Tools) != PageTools || first.NextCursor == "" {
		t.Fatalf("40 visible tools: listed %d, total %d, first page %d, cursor %q", len(all), first.Total, len(first.Tools), first.NextCursor)
	}
	if !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Errorf("the listed tools are not distinct tools in name order: %v", all)
	}

	// Fewer: only c1x. The cache of the old revision must not answer.
	applyAgent(t, a, "test.tools/c1?")
	now, _ := listAll(t, l, "agent")
	if len(now) != 10 {
		t.Fatalf("after the agent task was narrowed to c1?: %d tools visible, want 10", len(now))
	}
	_, err := l.ListTools(context.Background(), &wire.ListTools{Task: "agent", Cursor: first.NextCursor})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeBadCursor {
		t.Errorf("a cursor of the previous revision: %v, want %s", err, wire.CodeBadCursor)
	}
	// More again.
	applyAgent(t, a, "test.tools/*")
	if again, _ := listAll(t, l, "agent"); len(again) != 40 {
		t.Errorf("after the task was widened again: %d tools visible, want 40", len(again))
	}

	// A task the profile does not define is an error, never an empty list.
	_, err = l.ListTools(context.Background(), &wire.ListTools{Task: "nosuch"})
	if !errors.As(err, &we) || we.Code != wire.CodeTaskUndefined {
		t.Errorf("an undefined task: %v, want %s", err, wire.CodeTaskUndefined)
	}

	// Many revisions later, only the ones the projection cache may hold
	// keep their visible tools.
	for i := range 2 * projection.DefaultCacheSize {
		applyAgent(t, a, []string{"test.tools/c0?", "test.tools/*"}[i%2])
		listAll(t, l, "agent")
	}
	rev, err := l.core.ActiveRevision()
	if err != nil {
		t.Fatal(err)
	}
	l.visibles.Range(func(k, _ any) bool {
		if r := k.(visibleKey).p.Revision; r+projection.DefaultCacheSize < rev {
			t.Errorf("the visible tools of revision %d are still cached at revision %d", r, rev)
		}
		return true
	})
}
