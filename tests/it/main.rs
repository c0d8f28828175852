mod policy_examples;
