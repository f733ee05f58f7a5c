"""protocols/mixed"""
