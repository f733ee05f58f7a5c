"""protocols"""
