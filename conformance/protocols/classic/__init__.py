"""protocols/classic"""
