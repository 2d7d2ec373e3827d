// A self-testing C++ program whose early-exit loop structurizecfg (a GPU pass) miscompiles on CPU.
#include <cstdlib>
#include <vector>

static bool ever_negative(std::vector<int> deltas) {
    int total = 0;
    for (unsigned k = 0; k < deltas.size(); k++) {
        total += deltas[k];
        if (total < 0)
            return true;
    }
    return false;
}

int main() {
    if (ever_negative({})) std::abort();
    if (ever_negative({3, -1, -2})) std::abort();
    if (!ever_negative({2, -3, 4})) std::abort();
    return 0;
}
