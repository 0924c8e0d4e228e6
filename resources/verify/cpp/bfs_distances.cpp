#include <queue>
#include <vector>

// Return the number of edges on a shortest path from start to every vertex
// of the graph given as adjacency lists, or -1 where none exists.
std::vector<int> bfs_distances(const std::vector<std::vector<int>> &adj, int start) {
    std::vector<int> dist(adj.size(), -1);
    std::queue<int> frontier;
    dist[start] = 0;
    frontier.push(start);
    while (!frontier.empty()) {
        int u = frontier.front();
        frontier.pop();
        for (int v : adj[u]) {
            if (dist[v] == -1) {
                dist[v] = dist[u] + 1;
                frontier.push(v);
            }
        }
    }
    return dist;
}
