#include <stddef.h>

struct node {
    int value;
    struct node *next;
};

struct node *reverse_list(struct node *head)
{
    if (head == NULL || head->next == NULL)
        return head;
    struct node *rest = reverse_list(head->next);
    head->next->next = head;
    head->next = NULL;
    return rest;
}
