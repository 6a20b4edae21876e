"""Offline loss-report analysis with PySpark (`mediadriver analyze-loss`).

The only package that imports pyspark and matplotlib; nothing else in driver/ imports it, and importing this
package itself imports neither (``command`` checks for them first).
"""
