#include <vector>

std::vector<int> bfs_distances(const std::vector<std::vector<int>> &adj, int start) {
    std::vector<int> dist(adj.size(), -1);
    std::vector<int> level{start};
    dist[start] = 0;
    for (int d = 1; !level.empty(); ++d) {
        std::vector<int> next;
        for (int u : level)
            for (int v : adj[u])
                if (dist[v] < 0) {
                    dist[v] = d;
                    next.push_back(v);
                }
        level.swap(next);
    }
    return dist;
}
