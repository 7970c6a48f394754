"""The billing domain: money, the pricebook, transactions, the rated charge."""
