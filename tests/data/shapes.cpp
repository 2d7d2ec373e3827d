// Fixture: C++ with virtual calls, templates and std::vector.
#include <vector>

struct Shape {
    virtual ~Shape() = default;
    virtual long area() const = 0;
};
struct Rect : Shape {
    long w, h;
    Rect(long w_, long h_) : w(w_), h(h_) {}
    long area() const override { return w * h; }
};
struct Square : Shape {
    long s;
    explicit Square(long s_) : s(s_) {}
    long area() const override { return s * s; }
};

template <typename T> T total(const std::vector<T> &values) {
    T sum{};
    for (const T &v : values) sum += v;
    return sum;
}

int main() {
    Rect r(3, 4);
    Square q(5);
    std::vector<const Shape *> shapes{&r, &q};
    std::vector<long> areas;
    for (const Shape *s : shapes) areas.push_back(s->area());
    return total(areas) == 37 ? 0 : 1;
}
