"""An inventory of a made-up shop: the corpus of leaktrace's audit example (nothing planted here)."""

from dataclasses import dataclass, field


@dataclass
class Item:
    name: str
    price: float
    quantity: int = 0


@dataclass
class Inventory:
    items: dict = field(default_factory=dict)

    def add(self, item):
        if item.name in self.items:
            self.items[item.name].quantity += item.quantity
        else:
            self.items[item.name] = item

    def remove(self, name, quantity):
        item = self.items[name]
        if quantity > item.quantity:
            raise ValueError(f"only {item.quantity} of {name} left")
        item.quantity -= quantity
        if item.quantity == 0:
            del self.items[name]

    def total_value(self):
        return sum(item.price * item.quantity for item in self.items.values())

    def cheapest(self, count):
        ranked = sorted(self.items.values(), key=lambda item: (item.price, item.name))
        return [item.name for item in ranked[:count]]
