// Command funcsize lists the functions of the module's Go files (tests
// included, generated files excluded) whose length in lines or cyclomatic
// complexity passes a limit, longest first, and exits 1 if any does: the
// house rule of docs/architecture.md (no function over 100 lines, none over
// complexity 40).
//
//	go run ./scripts/funcsize [-lines 100] [-complexity 40] [-all] [DIR]
//
// Complexity is gocyclo's: 1, plus one for each if, for, range, case
// clause other than default, communication clause, && and ||. A function
// literal counts toward the function that holds it, as a reader meets it.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type fn struct {
	pos          token.Position
	name         string
	lines, cyclo int
}

func main() {
	maxLines := flag.Int("lines", 100, "longest function allowed, in lines")
	maxCyclo := flag.Int("complexity", 40, "highest cyclomatic complexity allowed")
	all := flag.Bool("all", false, "list every function, not only those past a limit")
	top := flag.Int("top", 0, "with -all, list only the N longest")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	fns, err := scan(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "funcsize:", err)
		os.Exit(2)
	}
	sort.Slice(fns, func(i, j int) bool {
		if fns[i].lines != fns[j].lines {
			return fns[i].lines > fns[j].lines
		}
		return fns[i].cyclo > fns[j].cyclo
	})
	over := 0
	for i, f := range fns {
		bad := f.lines > *maxLines || f.cyclo > *maxCyclo
		if bad {
			over++
		}
		if bad || (*all && (*top == 0 || i < *top)) {
			fmt.Printf("%5d lines  cyclo %3d  %s  %s:%d\n", f.lines, f.cyclo, f.name, f.pos.Filename, f.pos.Line)
		}
	}
	fmt.Printf("%d functions, %d over %d lines or complexity %d\n", len(fns), over, *maxLines, *maxCyclo)
	if over > 0 {
		os.Exit(1)
	}
}

func scan(root string) ([]fn, error) {
	var out []fn
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) > 0 {
				name = "(" + recvType(fd.Recv.List[0].Type) + ")." + name
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			out = append(out, fn{pos: start, name: f.Name.Name + "." + name, lines: end.Line - start.Line + 1, cyclo: complexity(fd)})
		}
		return nil
	})
	return out, err
}

func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

func complexity(fd *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}
