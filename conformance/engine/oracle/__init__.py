"""engine/oracle"""
