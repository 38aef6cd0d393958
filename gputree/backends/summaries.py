"""The node summary kernel body, shared by the CPU and CUDA backends: leaf
values and impurity of a node from its fixed-point channel totals, compiled
with a backend's ``jit`` from the criterion formulas."""
from .formulas import make_criterion_functions, specialised


def node_summaries_kernel_body(jit, inline=None, measure=None, entry=None):
    """Compile ``summary(node, totals, layout, inv, params, OUT values, OUT
    impurity)``: leaf values (n_nodes, n_outputs, n_classes) and impurity of
    one node from its int64 channel totals (n_nodes, n_channels); ``inline``
    and ``measure`` as in make_criterion_functions; ``summary`` itself with
    ``entry`` (default ``jit``)."""
    crit = make_criterion_functions(jit, inline, measure)
    node_value, impurity = crit.node_value, crit.impurity

    @specialised(entry or jit, measure)
    def summary(node, totals, layout, inv, params, values, impurities):
        S = totals[node]
        for o in range(values.shape[1]):
            for k in range(values.shape[2]):
                values[node, o, k] = node_value(S, layout, inv, params, o, k)
        impurities[node] = impurity(S, layout, inv)

    return summary
