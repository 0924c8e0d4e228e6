#include <stddef.h>

struct node {
    int value;
    struct node *next;
};

/* Reverse the singly linked list that starts at head by turning every next
   pointer around, and return the new head of the list. */
struct node *reverse_list(struct node *head)
{
    struct node *prev = NULL;
    while (head != NULL) {
        struct node *next = head->next;
        head->next = prev;
        prev = head;
        head = next;
    }
    return prev;
}
