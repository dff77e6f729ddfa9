void poisson(double *u, const double *f, int n, int rank, int size) {
    int it = 0;
    double norm = 1.0;
    while (norm > TOLERANCE && it < MAX_ITERATIONS) {
        exchange_band(u, n, rank, size);
        sweep_band(u, f, n);
        norm = get_norm(u, n);
        if (rank == 0) {
            print_norm(it, norm);
        }
        for (int row = 0; row < n; row++) {
            relax_row(u, row);
        }
        if (norm <= TOLERANCE) {
            handle_converged(u, n, it);
        } else {
            handle_not(u, n, it);
        }
        check_progress(it);
        it++;
    }
    finish(u, n);
}

/* The reduction the paper's injected bug stalls in. */
double get_norm(const double *u, int n) {
    double local = 0.0, global = 0.0;
    for (int i = 0; i < n; i++) {
        local += u[i] * u[i];
    }
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return global;
}
