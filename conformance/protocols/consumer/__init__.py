"""protocols/consumer"""
