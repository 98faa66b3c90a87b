package symname

import "testing"

// TestShort: names as c++filt and the demanglers of pprof and heaptrack
// write them (from cc1, node and a std::map program's sites), and names of
// other languages, which stay as they are.
func TestShort(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// C++: templates collapse, argument lists go, scopes stay.
		{"std::vector<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, std::allocator<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > > >::_M_realloc_insert<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&>(__gnu_cxx::__normal_iterator<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >*, std::vector<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, std::allocator<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > > > >, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
			"std::vector<…>::_M_realloc_insert<…>"},
		{"std::_Rb_tree_node<std::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const, std::vector<std::shared_ptr<(anonymous namespace)::Item>, std::allocator<std::shared_ptr<(anonymous namespace)::Item> > > > >* std::_Rb_tree<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, std::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const, std::vector<std::shared_ptr<(anonymous namespace)::Item>, std::allocator<std::shared_ptr<(anonymous namespace)::Item> > > >, std::_Select1st<std::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const, std::vector<std::shared_ptr<(anonymous namespace)::Item>, std::allocator<std::shared_ptr<(anonymous namespace)::Item> > > > >, std::less<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > >, std::allocator<std::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const, std::vector<std::shared_ptr<(anonymous namespace)::Item>, std::allocator<std::shared_ptr<(anonymous namespace)::Item> > > > > >::_M_create_node<std::piecewise_construct_t const&, std::tuple<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&>, std::tuple<> >(std::piecewise_construct_t const&, std::tuple<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&>&&, std::tuple<>&&)",
			"std::_Rb_tree<…>::_M_create_node<…>"},
		{"v8::internal::Heap::AllocateRaw(int, v8::internal::AllocationType, v8::internal::AllocationOrigin, v8::internal::AllocationAlignment)",
			"v8::internal::Heap::AllocateRaw"},
		{"node::Environment::Environment(node::IsolateData*, v8::Isolate*, std::vector<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, std::allocator<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > > > const&, std::vector<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, std::allocator<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > > > const&, std::unique_ptr<node::EnvSerializeInfo, std::default_delete<node::EnvSerializeInfo> > const*, node::EnvironmentFlags::Flags, node::ThreadId)",
			"node::Environment::Environment"},
		{"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_construct<char const*>(char const*, char const*, std::forward_iterator_tag) [clone .isra.0]",
			"std::__cxx11::basic_string<…>::_M_construct<…>"},
		{"std::__cxx11::to_string[abi:cxx11](int)", "std::__cxx11::to_string"},
		// Free functions of cc1 (C++ since GCC 4.8).
		{"ggc_internal_alloc(unsigned long, void (*)(void*), unsigned long, unsigned long)", "ggc_internal_alloc"},
		{"make_node(tree_code)", "make_node"},
		{"xmalloc(unsigned long)", "xmalloc"},
		// Operators: their brackets are names, not templates or arguments.
		{"operator new(unsigned long)", "operator new"},
		{"operator new[](unsigned long, std::nothrow_t const&)", "operator new[]"},
		{"operator delete(void*, unsigned long)", "operator delete"},
		{"std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> >&, char const*)",
			"std::operator<< <…>"},
		{"bool std::operator< <char, std::char_traits<char>, std::allocator<char> >(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
			"std::operator< <…>"},
		{"std::map<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, int, std::less<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > >, std::allocator<std::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const, int> > >::operator[](std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
			"std::map<…>::operator[]"},
		{"Foo::operator()(int) const", "Foo::operator()"},
		{"Foo::operator->() const", "Foo::operator->"},
		{"Foo::operator<=>(Foo const&) const", "Foo::operator<=>"},
		// Lambdas and std::function.
		{"main::{lambda(int)#1}::operator()(int) const", "main::{lambda#1}::operator()"},
		{"std::_Function_handler<void (int), main::{lambda(int)#1}>::_M_invoke(std::_Any_data const&, int&&)",
			"std::_Function_handler<…>::_M_invoke"},
		{"run()::{lambda()#2}::operator()() const", "run::{lambda#2}::operator()"},
		// DWARF's names (the sites library's), not the linkage names'.
		{"main()::<lambda(int)>::operator()(int) const", "main::<lambda>::operator()"},
		{"__invoke_impl<void, main()::<lambda(int)>&, int>", "__invoke_impl<…>"},
		{"heap::base::Worklist<std::pair<v8::internal::HeapObject, int>, (unsigned short)256>::Local::PublishPushSegment()",
			"heap::base::Worklist<…>::Local::PublishPushSegment"},
		{"heap::base::SlotCallbackResult v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>(v8::internal::FullHeapObjectSlot, v8::internal::HeapObject)",
			"v8::internal::Scavenger::ScavengeObject<…>"},
		// The anonymous namespace is a scope, kept.
		{"(anonymous namespace)::Parser::parse(char const*)", "(anonymous namespace)::Parser::parse"},
		{"void app::Index<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > >::add<int>(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int)",
			"app::Index<…>::add<…>"},
		// Not C++: unchanged.
		{"main", "main"},
		{"malloc", "malloc"},
		{"memprobe/trainer/model.(*Model).Forward", "memprobe/trainer/model.(*Model).Forward"},
		{"runtime.(*mheap).alloc", "runtime.(*mheap).alloc"},
		{"main.Map[go.shape.int,go.shape.string]", "main.Map[go.shape.int,go.shape.string]"},
		{"main.main.func1", "main.main.func1"},
		{"<module>", "<module>"},
		{"<listcomp> (train.py:12)", "<listcomp> (train.py:12)"},
		{"Trainer.step (model/train.py:88)", "Trainer.step (model/train.py:88)"},
		{"numpy.core._multiarray_umath", "numpy.core._multiarray_umath"},
		{"", ""},
	} {
		if got := Short(c.in); got != c.want {
			t.Errorf("Short(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// FuzzShort: Short never panics and is idempotent (a short name is its
// own short name).
func FuzzShort(f *testing.F) {
	for _, s := range []string{"std::vector<int>::push_back(int&&)", "operator<<", "a::operator", "f(", ")(", "<<>>", "x::{lambda(", "(anonymous namespace)::f()"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := Short(s)
		if b := Short(a); b != a {
			t.Errorf("Short(%q) = %q, Short of that %q", s, a, b)
		}
	})
}
