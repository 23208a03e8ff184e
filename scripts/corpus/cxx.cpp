// C++ workload for the perf corpus: templates, virtual calls, std::sort, std::map, lambdas.
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>
namespace shapes {
struct Shape { virtual ~Shape() = default; virtual double area(int k) const = 0; };
struct Square : Shape { double s; explicit Square(double v) : s(v) {} double area(int k) const override { double a = 0; for (int i = 0; i < 2000 + k; i++) a += s * s / (i + 1); return a; } };
struct Circle : Shape { double r; explicit Circle(double v) : r(v) {} double area(int k) const override { double a = 0; for (int i = 0; i < 3000 + k; i++) a += 3.14159 * r * r / (i + 2); return a; } };
}
template <typename T> __attribute__((noinline)) T accumulate_squares(const std::vector<T> &v) { T s = 0; for (auto x : v) s += x * x; return s; }
static long cpu_ms() { timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1000 + t.tv_nsec / 1000000; }
int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 200;
    std::vector<std::unique_ptr<shapes::Shape>> shapes;
    for (int i = 0; i < 64; i++) { if (i % 2) shapes.emplace_back(new shapes::Square(i)); else shapes.emplace_back(new shapes::Circle(i)); }
    volatile double sink = 0;
    long start = cpu_ms();
    unsigned seed = 1;
    while (cpu_ms() - start < ms) {
        std::vector<long> v(20000);
        for (auto &x : v) x = (seed = seed * 1103515245 + 12345) % 100000;
        std::sort(v.begin(), v.end(), [](long a, long b) { return a % 977 < b % 977 || (a % 977 == b % 977 && a < b); });
        sink = sink + accumulate_squares(v);
        std::map<std::string, int> m;
        for (int i = 0; i < 500; i++) m[std::to_string(v[i])] += i;
        sink = sink + m.size();
        for (auto &s : shapes) sink = sink + s->area(v[0] % 100);
    }
    return 0;
}
