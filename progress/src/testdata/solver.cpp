#include <stdexcept>
#include <vector>

class Solver {
public:
    void relax() {
        for (int i = 0; i < n_; ++i) {
            smooth(i);
        }
    }
    void step();

private:
    int n_ = 4;
};

void Solver::step() {
    std::vector<double> values(n_);
    for (double& value : values) {
        update(value);
    }
    auto visit = [&](int rank) {
        if (rank > 0) {
            send_to(rank);
        }
    };
    visit(1);
    try {
        communicate();
    } catch (const std::runtime_error& error) {
        report(error);
    } catch (...) {
        abort_all();
    }
    wait_all();
}

template <typename T>
T accumulate(const std::vector<T>& items) {
    T total{};
    for (const T& item : items) {
        total += reduce_one(item);
    }
    if constexpr (sizeof(T) > 4) {
        wide_path(total);
    } else {
        narrow_path(total);
    }
    return total;
}
