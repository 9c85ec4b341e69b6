// The registry of the program's live graphs and nodes (graph_model.cpp):
// every handle a program passes is checked against it. Callers hold mu().
#pragma once

#include <mutex>
#include <unordered_set>

#include "graph.h"

namespace vgpu::driver::graph {

std::mutex& mu();
// Graphs the program owns (a child graph's clone is owned by its node).
std::unordered_set<Graph*>& graphs();
// Every node of every graph, owned or not.
std::unordered_set<Node*>& nodes();
// A graph's nodes (and its child graphs' and conditional bodies') leave or
// join the registry.
void forget_nodes(Graph& g);
void remember_nodes(Graph& g);

}  // namespace vgpu::driver::graph
