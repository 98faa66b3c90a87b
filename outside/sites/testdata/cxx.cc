// cxx: allocation sites in C++ (operator new, std::vector, a template),
// for outside/sites' tests: the site is the program's function, named
// demangled, not operator new.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace shapes {
template <typename T> struct Grid {
	std::vector<T> cells;
	__attribute__((noinline)) explicit Grid(size_t n) : cells(n) {}
};
} // namespace shapes

// Held to the end: 4 grids of 250000 doubles (2,000,000 bytes each).
__attribute__((noinline)) std::vector<std::unique_ptr<shapes::Grid<double>>> make_grids() {
	std::vector<std::unique_ptr<shapes::Grid<double>>> v;
	v.reserve(4);
	for (int i = 0; i < 4; i++)
		v.push_back(std::make_unique<shapes::Grid<double>>(250000));
	return v;
}

int main() {
	auto grids = make_grids();
	std::vector<std::unique_ptr<shapes::Grid<double>>> *leak = new auto(std::move(grids));
	std::printf("%zu\n", (*leak)[0]->cells.size());
	return 0;
}
