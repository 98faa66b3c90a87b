// Package symname shortens demangled C++ function names for people, the way
// pprof (demangle's NoParams and NoTemplateParams) and heaptrack (collapsed
// templates) show them: the argument lists go, template arguments collapse
// to "<…>", and the scopes stay, so that
//
//	std::vector<std::string, std::allocator<std::string> >::_M_realloc_insert<std::string const&>(__gnu_cxx::__normal_iterator<...>, std::string const&)
//
// reads std::vector<…>::_M_realloc_insert<…>. Names that are not C++ (Go,
// Python, C, Rust without "::") come back unchanged. It only renders: the
// full name stays in the profile and the report.
package symname

import "strings"

// Short is name shortened, or name itself when it does not look like a
// demangled C++ name (it has no "::" and no argument list after an
// identifier).
func Short(name string) string {
	if !isCPP(name) {
		return name
	}
	s := dropTags(name)
	s = collapse(s)
	s = dropReturnType(s)
	if s == "" {
		return name
	}
	return s
}

// isCPP says whether name looks demangled from C++: a scope ("::") or an
// argument list right after an identifier at the end ("f(int)", not Go's
// "(*T).M" or a Python label's "f (x.py:3)").
func isCPP(name string) bool {
	if strings.Contains(name, "::") {
		return true
	}
	s := trimQualifiers(name)
	if !strings.HasSuffix(s, ")") {
		return false
	}
	open := matchOpen(s, len(s)-1)
	return open > 0 && isIdent(s[open-1])
}

// trimQualifiers drops a member function's trailing qualifiers (" const",
// " &&", ...), which follow its argument list.
func trimQualifiers(s string) string {
	for {
		t := s
		for _, q := range []string{" const", " volatile", " &&", " &", " noexcept"} {
			t = strings.TrimSuffix(t, q)
		}
		if t == s {
			return s
		}
		s = t
	}
}

// matchOpen is the index of the '(' that the ')' at close closes, or -1.
func matchOpen(s string, close int) int {
	depth := 0
	for i := close; i >= 0; i-- {
		switch s[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// dropTags removes GCC's clone suffixes (" [clone .cold]") and ABI tags
// ("[abi:cxx11]"), which tell nothing a reader needs.
func dropTags(s string) string {
	for _, open := range []string{" [clone ", "[abi:"} {
		for {
			i := strings.Index(s, open)
			if i < 0 {
				break
			}
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				break
			}
			s = s[:i] + s[i+j+1:]
		}
	}
	return s
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// collapse copies s with every template argument list written "<…>" and
// every argument list (after an identifier, a '>' or an operator's name)
// dropped, except "(anonymous namespace)" and DWARF's "<lambda(int)>",
// which is "<lambda>". An operator's name ("operator<<",
// "operator()") is copied as it is, so that its brackets are not taken for
// a template's or an argument list's.
func collapse(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "operator") && (i == 0 || !isIdent(s[i-1])) && i+8 < len(s) && !isIdent(s[i+8]):
			n := operatorLen(s[i:])
			b.WriteString(s[i : i+n])
			i += n
		case strings.HasPrefix(s[i:], "<lambda"):
			// DWARF's name of a lambda's class: a scope, not arguments.
			b.WriteString("<lambda>")
			i = skip(s, i, '<', '>')
		case s[i] == '<':
			b.WriteString("<…>")
			i = skip(s, i, '<', '>')
		case s[i] == '(' && strings.HasPrefix(s[i:], "(anonymous namespace)"):
			b.WriteString("(anonymous namespace)")
			i += len("(anonymous namespace)")
		case s[i] == '(' && i > 0 && (isIdent(s[i-1]) || s[i-1] == '>' || s[i-1] == ')' || s[i-1] == ']'):
			i = skip(s, i, '(', ')')
			// A member function's qualifiers follow its arguments.
			for _, q := range []string{" const", " volatile", " &&", " &", " noexcept"} {
				if strings.HasPrefix(s[i:], q) && (i+len(q) == len(s) || !isIdent(s[i+len(q)])) {
					i += len(q)
				}
			}
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// skip is the index after the bracket that closes the one at s[i].
func skip(s string, i int, open, close byte) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(s)
}

// operatorLen is the length of the operator's name at the start of s:
// "operator" and its symbol ("<<=", "()", "[]", "->*", " new[]"), or its
// word for a conversion or new and delete ("operator new").
func operatorLen(s string) int {
	n := len("operator")
	rest := s[n:]
	for _, op := range []string{"<=>", "<<=", ">>=", "->*", "()", "[]", "<<", ">>", "<=", ">=", "->", "<", ">"} {
		if strings.HasPrefix(rest, op) {
			return n + len(op)
		}
	}
	for _, w := range []string{" new[]", " delete[]", " new", " delete"} {
		if strings.HasPrefix(rest, w) {
			return n + len(w)
		}
	}
	return n
}

// dropReturnType drops what precedes the name at the top level: a
// template function's return type ("std::string& f<…>" is f<…>). The
// space of "operator new", the one before an operator's template
// arguments ("operator<< <…>") and those inside "(anonymous namespace)"
// and "{lambda#1}" are not such a boundary.
func dropReturnType(s string) string {
	depth := 0
	cut := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			depth--
		case ' ':
			if depth == 0 && !strings.HasSuffix(s[:i], "operator") && !strings.HasPrefix(s[i:], " <") {
				cut = i
			}
		}
	}
	return s[cut+1:]
}

// ShortAll is Short of each name, in a new slice.
func ShortAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Short(n)
	}
	return out
}
