"""Hot-path prediction: where programs spend their time, measured from profiles and predicted from IR."""
