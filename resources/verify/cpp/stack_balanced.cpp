#include <stack>
#include <string>

// Check that every bracket of the expression, round, square or curly, is
// closed by the matching bracket in the right order.
bool balanced(const std::string &expr) {
    std::stack<char> open;
    for (char c : expr) {
        if (c == '(' || c == '[' || c == '{') {
            open.push(c);
        } else if (c == ')' || c == ']' || c == '}') {
            if (open.empty()) return false;
            char top = open.top();
            open.pop();
            if ((c == ')' && top != '(') || (c == ']' && top != '[') || (c == '}' && top != '{')) return false;
        }
    }
    return open.empty();
}
