"""What the Azure deployment costs: the list prices (one place) and the arithmetic on the meter."""
